import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { metricsRegistry } from '../metrics/registry.js';
import { errorMessage, logger } from '../logging/logger.js';

/** A named check; returns an error message when failing. */
export type Check = () => string | undefined;

export interface BindAddress {
  /** "" means all interfaces. */
  host: string;
  port: number;
}

/**
 * /metrics on one address, /healthz and /readyz on another, as controller-runtime's
 * --metrics-bind-address and --health-probe-bind-address. Check output follows kube-apiserver's
 * "[+]name ok" / "[-]name failed: reason" style, with ?verbose.
 */
export class HttpEndpoints {
  private readonly servers: http.Server[] = [];
  private readonly liveness = new Map<string, Check>();
  private readonly readiness = new Map<string, Check>();
  private readonly log = logger().child({ component: 'http' });

  addHealthzCheck(name: string, check: Check): void {
    this.liveness.set(name, check);
  }

  addReadyzCheck(name: string, check: Check): void {
    this.readiness.set(name, check);
  }

  /** Starts serving; returns the bound port (useful with port 0). */
  async serveMetrics(addr: BindAddress): Promise<number> {
    return this.listen(addr, async (url, res) => {
      if (url.pathname !== '/metrics') return notFound(res);
      try {
        const body = await metricsRegistry.metrics();
        res.writeHead(200, { 'Content-Type': metricsRegistry.contentType });
        res.end(body);
      } catch (err) {
        res.writeHead(500).end(errorMessage(err));
      }
    });
  }

  async serveProbes(addr: BindAddress): Promise<number> {
    return this.listen(addr, (url, res) => {
      const p = url.pathname;
      if (p === '/healthz' || p === '/livez') return this.answer(url, res, this.liveness);
      if (p === '/readyz') return this.answer(url, res, this.readiness);
      notFound(res);
    });
  }

  async close(): Promise<void> {
    await Promise.all(
      this.servers.splice(0).map(
        (s) =>
          new Promise<void>((resolve) => {
            s.close(() => resolve());
            s.closeAllConnections();
          }),
      ),
    );
  }

  private answer(url: URL, res: http.ServerResponse, checks: Map<string, Check>): void {
    const lines: string[] = [];
    let ok = true;
    for (const [name, check] of checks) {
      let failure: string | undefined;
      try {
        failure = check();
      } catch (err) {
        failure = errorMessage(err);
      }
      if (failure) ok = false;
      lines.push(failure ? `[-]${name} failed: ${failure}` : `[+]${name} ok`);
    }
    const verbose = url.searchParams.has('verbose');
    const body = ok && !verbose ? 'ok' : `${lines.join('\n')}\n${ok ? 'check passed' : 'check failed'}`;
    res.writeHead(ok ? 200 : 500, { 'Content-Type': 'text/plain; charset=utf-8' });
    res.end(body + '\n');
  }

  /**
   * Anyone who reaches the port may send anything: a request target that is no URL path (`//`,
   * `http://[/`) is answered 400, and whatever a handler throws, synchronously or not, is answered
   * 500 and logged. Either used to throw out of the request listener: one request ended the process.
   */
  private listen(addr: BindAddress, handler: (url: URL, res: http.ServerResponse) => void | Promise<void>): Promise<number> {
    const server = http.createServer((req, res) => {
      const url = urlOf(req);
      if (!url) return void res.writeHead(400, { 'Content-Type': 'text/plain' }).end('bad request target\n');
      void Promise.resolve()
        .then(() => handler(url, res))
        .catch((err: unknown) => {
          this.log.error('http handler failed', { error: errorMessage(err) });
          if (!res.headersSent) res.writeHead(500);
          res.end();
        });
    });
    this.servers.push(server);
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(addr.port, addr.host || undefined, () => {
        server.off('error', reject);
        // An error of the listening socket after the start (not a client's: those are 'clientError',
        // which Node answers) is logged, not thrown out of the process.
        server.on('error', (err) => this.log.error('http server error', { port: addr.port, error: errorMessage(err) }));
        resolve((server.address() as AddressInfo).port);
      });
    });
  }
}

/** The request's target as a URL; undefined when it is not one (an origin-form path is always one). */
function urlOf(req: http.IncomingMessage): URL | undefined {
  try {
    return new URL(req.url ?? '/', 'http://x');
  } catch {
    return undefined;
  }
}

function notFound(res: http.ServerResponse): void {
  res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found\n');
}
