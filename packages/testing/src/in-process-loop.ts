import type { KubeClient } from '@topovol/shared';
import { RunnableGroup } from '@topovol/shared';
import { EventRecorder } from '@topovol/shared';
import { InformerFactory } from '@topovol/shared';
import { logger } from '@topovol/shared';
import { runnablesOf } from '@topovol/shared';
import type { ControllerDescriptor } from '@topovol/shared';
import { eventSourceOf, parseManagerFlags } from '@topovol/shared';
import { controllerClient } from './controller-identity.js';

export interface InProcessLoopOptions {
  /** Defaults to the loop's own ServiceAccount with the generated RBAC (controllerClient). */
  client?: KubeClient;
  /**
   * false: return at once; the workers start when the informers have synced, which may be never
   * (e.g. a list the identity may not do). Default true: resolve once they run.
   */
  waitForSync?: boolean;
  /**
   * A replica that does not lead yet: its informers sync and its handlers run, but only the
   * runnables that need no Lease start, until lead(). Resolves once synced.
   */
  standby?: boolean;
}

/**
 * One loop in the test process against the real API server, wired as the manager wires it (its
 * descriptor's flags, setup and Event component; workers once the informers synced), without
 * leader election. The integration suites' harnesses are thin wrappers around this.
 */
export class InProcessLoop {
  private constructor(
    /** What the setup returned. */
    readonly runnables: RunnableGroup,
    readonly informers: InformerFactory,
    readonly events: EventRecorder,
    private readonly abort: AbortController,
  ) {}

  static async start(d: ControllerDescriptor, args: string[], opts: InProcessLoopOptions = {}): Promise<InProcessLoop> {
    const client = opts.client ?? (await controllerClient(d.name));
    const options = parseManagerFlags(args, d.flags ?? []);
    const informers = new InformerFactory(client);
    const source = eventSourceOf(d, 'test');
    const events = new EventRecorder(client, source.component, source.host, options.dryRun);
    const runnables = new RunnableGroup(runnablesOf(await d.setup({ client, informers, events, options, log: logger(), setupProgress: () => undefined })));
    const abort = new AbortController();
    informers.start();
    const running = informers.waitForSync(abort.signal).then(() => runnables.start(opts.standby !== true));
    if (opts.waitForSync === false) running.catch(() => undefined);
    else await running;
    return new InProcessLoop(runnables, informers, events, abort);
  }

  /** A standby takes the Lease: its other runnables start (the manager's onStartedLeading). */
  lead(): void {
    this.runnables.start(true);
  }

  /**
   * Resolves once every informer has listed, or after `boundMs` (a list the identity may not do
   * never completes). Scenarios wait for this before the changes that must arrive by watch, so
   * that a change cannot slip into the first list instead.
   */
  async listed(boundMs = 3_000): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.informers.waitForSync().catch(() => undefined), new Promise((r) => (timer = setTimeout(r, boundMs)))]);
    clearTimeout(timer);
  }

  async stop(timeoutMs = 10_000): Promise<void> {
    this.abort.abort();
    await this.runnables.stop(timeoutMs);
    await this.events.flush();
    await this.informers.stop();
  }
}
