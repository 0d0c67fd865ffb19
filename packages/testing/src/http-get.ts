import http from 'node:http';
import https from 'node:https';

export interface HttpAnswer {
  status: number;
  body: string;
  /** Lower-cased, as Node gives them. */
  headers: http.IncomingHttpHeaders;
}

export interface HttpRequestOptions {
  token?: string;
  timeoutMs?: number;
  /** Sent as JSON. */
  body?: unknown;
}

/**
 * A request to a test component's own endpoint (a readiness probe, /metrics) or the test API
 * server: status, body and response headers. An https server's certificate is not checked: these
 * are throwaway self-signed ones, and nothing secret crosses (the kubeconfigs written for clients
 * pin the real CA).
 */
export function httpRequest(method: string, url: string, opts: HttpRequestOptions = {}): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const payload = opts.body === undefined ? undefined : JSON.stringify(opts.body);
    const headers: Record<string, string> = {
      ...(opts.token ? { Authorization: `Bearer ${opts.token}` } : {}),
      ...(payload === undefined ? {} : { 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(payload)) }),
    };
    const timeout = opts.timeoutMs ?? 5_000;
    const onResponse = (res: http.IncomingMessage): void => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
      res.on('error', reject);
    };
    const req = url.startsWith('https:') ? https.request(url, { method, headers, rejectUnauthorized: false, timeout }, onResponse) : http.request(url, { method, headers, timeout }, onResponse);
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error(`${method} ${url}: timed out after ${timeout} ms`)));
    req.end(payload);
  });
}

export function httpGet(url: string, opts: Omit<HttpRequestOptions, 'body'> = {}): Promise<HttpAnswer> {
  return httpRequest('GET', url, opts);
}
