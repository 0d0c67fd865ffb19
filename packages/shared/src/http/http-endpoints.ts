import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { metricsRegistry } from '../metrics/registry.js';
import { errorMessage, logger } from '../logging/logger.js';
import type { DelegatedAuth } from './delegated-auth.js';
import type { ServingCert } from './serving-cert.js';

/** A named check; returns an error message when failing. */
export type Check = () => string | undefined;

export interface BindAddress {
  /** "" means all interfaces. */
  host: string;
  port: number;
}

/** --metrics-secure: HTTPS with this certificate, and every request authenticated and authorized by the API server. */
export interface SecureServing {
  cert: ServingCert;
  auth: DelegatedAuth;
}

/**
 * /metrics on one address, /healthz and /readyz on another, as controller-runtime's
 * --metrics-bind-address and --health-probe-bind-address. Check output follows kube-apiserver's
 * "[+]name ok" / "[-]name failed: reason" style, with ?verbose. The probes stay plain HTTP with no
 * authentication (the kubelet probes them, and they say nothing but ok); /metrics is HTTPS behind
 * the API server's TokenReview and SubjectAccessReview when `secure` is given, as
 * kube-controller-manager's secure port and controller-runtime's secure metrics serve it.
 */
export class HttpEndpoints {
  private readonly servers: (http.Server | https.Server)[] = [];
  private readonly certs: ServingCert[] = [];
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
  async serveMetrics(addr: BindAddress, secure?: SecureServing): Promise<number> {
    return this.listen(addr, async (url, res, req) => {
      if (url.pathname !== '/metrics') return notFound(res);
      if (req.method !== 'GET' && req.method !== 'HEAD') return void res.writeHead(405, { Allow: 'GET, HEAD', 'Content-Type': 'text/plain' }).end('method not allowed\n');
      if (secure) {
        const answer = await secure.auth.check(req.headers.authorization, url.pathname, 'get');
        if (answer.status !== 200) return void res.writeHead(answer.status, { 'Content-Type': 'text/plain; charset=utf-8' }).end(`${answer.message}\n`);
      }
      try {
        const body = await metricsRegistry.metrics();
        res.writeHead(200, { 'Content-Type': metricsRegistry.contentType });
        res.end(body);
      } catch (err) {
        res.writeHead(500).end(errorMessage(err));
      }
    }, secure?.cert);
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
    for (const c of this.certs.splice(0)) c.stop();
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
  private listen(addr: BindAddress, handler: (url: URL, res: http.ServerResponse, req: http.IncomingMessage) => void | Promise<void>, cert?: ServingCert): Promise<number> {
    const onRequest = (req: http.IncomingMessage, res: http.ServerResponse): void => {
      const url = urlOf(req);
      if (!url) return void res.writeHead(400, { 'Content-Type': 'text/plain' }).end('bad request target\n');
      void Promise.resolve()
        .then(() => handler(url, res, req))
        .catch((err: unknown) => {
          this.log.error('http handler failed', { error: errorMessage(err) });
          if (!res.headersSent) res.writeHead(500);
          res.end();
        });
    };
    const server = cert ? https.createServer({ ...cert.pair, minVersion: 'TLSv1.2' }, onRequest) : http.createServer(onRequest);
    if (cert) this.certs.push(cert);
    if (cert && server instanceof https.Server) cert.watch((pair) => server.setSecureContext({ ...pair, minVersion: 'TLSv1.2' }));
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
