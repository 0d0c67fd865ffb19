import http from 'node:http';
import https from 'node:https';

/**
 * A GET of a test component's own endpoint (a readiness probe, /metrics): status, body and the
 * response headers (lower-cased, as Node gives them). An
 * https server's certificate is not checked: these are throwaway self-signed ones, and nothing
 * secret crosses (the kubeconfigs written for clients pin the real CA).
 */
export function httpGet(url: string, opts: { token?: string; timeoutMs?: number } = {}): Promise<{ status: number; body: string; headers: http.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const headers = opts.token ? { Authorization: `Bearer ${opts.token}` } : {};
    const timeout = opts.timeoutMs ?? 5_000;
    const onResponse = (res: http.IncomingMessage): void => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
      res.on('error', reject);
    };
    const req = url.startsWith('https:') ? https.get(url, { headers, rejectUnauthorized: false, timeout }, onResponse) : http.get(url, { headers, timeout }, onResponse);
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error(`GET ${url}: timed out after ${timeout} ms`)));
  });
}
