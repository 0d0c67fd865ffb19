import { counter } from '../metrics/registry.js';
import { logger } from '../logging/logger.js';
import type { KubeObject } from '../informer/object-key.js';
import { AnswerTooLargeError } from './http-transport.js';
import type { KubeClient, QueryValue } from './kube-client.js';
import { cutManagedFields } from './without-managed-fields.js';
import type { ManagedFieldsCut } from './without-managed-fields.js';
import { pageRetryWaitMs } from './page-retry.js';
import { sleep as realSleep } from '../controller/runnable.js';

/**
 * The most bytes of one list page read before it is parsed. A page is held whole (its bytes, the
 * text and the parsed objects at once) before anything is projected, and the objects' writers
 * decide its size: anyone who may create pods, claims or Events in a namespace can make each one
 * about 1.5 MB (etcd's request limit), so a page of 5,000 could be gigabytes, past the manager's
 * memory limit or V8's longest string. Volumes are about 1 KB each, so their pages of 5,000 stay
 * far below this; pods of a few KB each are cut once or twice at each list.
 */
export const LIST_PAGE_MAX_BYTES = 16 * 1024 * 1024;

/**
 * The most bytes of a page of one object. etcd stores an object of about 1.5 MB at most
 * (`--max-request-bytes`), and its JSON, every character escaped, is six times that: no answer
 * for one object is longer unless the server ignored the limit and sent more.
 */
export const ONE_OBJECT_MAX_BYTES = 64 * 1024 * 1024;

const pagesCut = counter<'resource'>({
  name: 'topovol_list_pages_cut_total',
  help: 'List pages whose answer was larger than the page byte budget (16 MiB): cut off unparsed and asked for again with fewer objects, by resource. A few at each list where objects are large (pods of many KB each); many at every list means someone made objects very large.',
  labelNames: ['resource'],
});

/**
 * How many objects the next page asks for. An answer past the byte budget halves the count and the
 * page is asked for again (same continue token: the server allows a new limit on any page); a page
 * read whole sizes the next one so that objects as large as its own fill half the budget, never
 * more than the starting count. A page of one object may be as large as ONE_OBJECT_MAX_BYTES:
 * etcd bounds it, and a list that can never finish would leave its informer unsynced for ever.
 */
export class PageSizer {
  private count: number;

  constructor(
    readonly limit: number,
    readonly maxBytes: number = LIST_PAGE_MAX_BYTES,
  ) {
    if (!Number.isInteger(limit) || limit < 1) throw new Error(`list page size ${limit}: want a whole number of objects, at least 1`);
    if (!Number.isFinite(maxBytes) || maxBytes < 1) throw new Error(`list page budget ${maxBytes}: want a number of bytes, at least 1`);
    this.count = limit;
  }

  /** Objects the next page asks for. */
  get next(): number {
    return this.count;
  }

  /** The byte budget of the next page. */
  get budget(): number {
    return this.count > 1 ? this.maxBytes : Math.max(this.maxBytes, ONE_OBJECT_MAX_BYTES);
  }

  /** The page's answer was cut off at the budget; false when it was a page of one object already. */
  cut(): boolean {
    if (this.count === 1) return false;
    this.count = Math.max(1, Math.floor(this.count / 2));
    return true;
  }

  /** A page of `items` objects was read whole in `bytes`. */
  read(bytes: number, items: number): void {
    if (items === 0) return;
    const perObject = Math.max(1, bytes / items);
    this.count = Math.max(1, Math.min(this.limit, Math.floor(this.maxBytes / 2 / perObject)));
  }
}

const pageRetries = counter<'resource'>({
  name: 'topovol_list_page_retries_total',
  help: 'List pages asked for again after a 429 or 5xx with Retry-After, or a dropped connection (as client-go retries a request), by resource; the list goes on from that page. Many means the API server is throttling or dropping this client.',
  labelNames: ['resource'],
});

interface ListAnswer {
  metadata?: { resourceVersion?: string; continue?: string };
  items?: KubeObject[] | null;
}

export interface ListPagesOptions {
  signal?: AbortSignal;
  /** Parse the pages without the objects' managedFields (withoutManagedFields), as the cut says: for a caller that drops them. */
  withoutManagedFields?: ManagedFieldsCut;
  /** Tests' wait before a page is asked for again (default a timer). */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

/**
 * GETs every page of a collection, each within the sizer's byte budget, and hands each page's items
 * to `onPage` before the next is asked for (so a caller keeps projections, not pages). Returns the
 * list's resourceVersion. `label` names the resource in the metric and the log line.
 */
export async function listPages(
  client: KubeClient,
  path: string,
  query: Record<string, QueryValue>,
  sizer: PageSizer,
  label: string,
  onPage: (items: KubeObject[]) => void,
  opts: ListPagesOptions = {},
): Promise<string> {
  const { signal } = opts;
  let cont: string | undefined;
  let rv = '';
  let retries = 0;
  for (;;) {
    let text: string;
    try {
      text = await client.requestText('GET', path, { query: { ...query, limit: sizer.next, continue: cont }, signal, maxBodyBytes: sizer.budget });
    } catch (err) {
      if (!(err instanceof AnswerTooLargeError)) {
        // The same page again (its continue token is still good for minutes), not the list anew.
        const wait = pageRetryWaitMs(err, retries);
        if (wait === undefined || signal?.aborted) throw err;
        retries++;
        pageRetries.inc({ resource: label });
        logger().debug('list page failed; asking for it again', { resource: label, retry: retries, waitMs: wait, error: err instanceof Error ? err.message : String(err) });
        await (opts.sleep ?? realSleep)(wait, signal ?? new AbortController().signal);
        if (signal?.aborted) throw err;
        continue;
      }
      pagesCut.inc({ resource: label });
      if (!sizer.cut()) throw new Error(`list of ${label}: the answer for one object is over ${err.maxBytes} bytes (a server that ignores limit?)`, { cause: err });
      logger().info('list page over its byte budget; asking for fewer objects', { resource: label, maxBytes: err.maxBytes, limit: sizer.next });
      continue;
    }
    const page = (text ? JSON.parse(cutManagedFields(text, opts.withoutManagedFields)) : {}) as ListAnswer;
    // An answer without the field (an empty body from a misbehaving proxy reads as {}) is no
    // list: taken for an empty one, it would delete every cached object.
    if (page.items === undefined) throw new Error(`list of ${label} answered without items`);
    const items = page.items ?? [];
    // Bytes, as the budget counts them: characters undercount text outside ASCII, and the next
    // page would be cut again and again.
    sizer.read(Buffer.byteLength(text), items.length);
    retries = 0;
    onPage(items);
    cont = page.metadata?.continue || undefined;
    rv = page.metadata?.resourceVersion ?? rv;
    if (!cont) return rv;
  }
}
