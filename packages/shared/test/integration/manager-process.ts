import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, ManagedProcess, parsePrometheusText } from '@topovol/testing';
import type { ControlPlane } from '@topovol/testing';

const fixture = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'echo-manager.js');

export interface EchoManager {
  proc: ManagedProcess;
  metricsPort: number;
  probePort: number;
}

/** Starts the echo fixture manager as a real child process against the test control plane. */
export async function startEchoManager(cp: ControlPlane, name: string, args: string[]): Promise<EchoManager> {
  const metricsPort = await freePort();
  const probePort = await freePort();
  const proc = new ManagedProcess({
    name,
    command: process.execPath,
    args: [
      fixture,
      `--kubeconfig=${cp.kubeconfigPath}`,
      `--metrics-bind-address=127.0.0.1:${metricsPort}`,
      // Plain HTTP for the suites that read metrics (httpGet below); metrics-auth.test.ts passes
      // --metrics-secure=true after it (a repeated flag overrides).
      '--metrics-secure=false',
      `--health-probe-bind-address=127.0.0.1:${probePort}`,
      '--log-format=text',
      '--log-level=debug',
      ...args,
    ],
    logFile: path.join(cp.dir, `${name}.log`),
  });
  return { proc, metricsPort, probePort };
}

export async function httpGet(port: number, p: string): Promise<{ status: number; body: string }> {
  const res = await fetch(`http://127.0.0.1:${port}${p}`);
  return { status: res.status, body: await res.text() };
}

/** The value of the first series of `name` in a Prometheus text body whose labels include `labels`. */
export function sample(body: string, name: string, labels: Record<string, string>): number | undefined {
  return parsePrometheusText(body).find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
}
