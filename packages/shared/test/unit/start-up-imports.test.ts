import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { expect } from 'chai';
import { repoRoot } from '@topovol/testing';

// Importing @kubernetes/client-node costs a starting manager about 0.4 s and 70 MiB (every generated
// API model loads; hack/bench/README.md, "Start-up"). The manager's module graph must not load it
// for an ordinary kubeconfig; an exec plugin still gets it (docs/adr/0012). Nor may it load the
// workspace packages the image leaves out (the Dockerfile drops packages/testing, manifests, e2e).

const HOOKS = `
export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  if (r.url.includes('@kubernetes/client-node') || r.url.includes('@kubernetes+client-node')) console.error('LOADED ' + r.url);
  if (['testing', 'manifests', 'e2e'].some((p) => r.url.includes('/packages/' + p + '/'))) console.error('NOT IN IMAGE ' + r.url);
  if (r.url.includes('@grpc')) console.error('GRPC ' + r.url);
  return r;
}
`;

function child(root: string, user: string): string {
  const url = (p: string): string => pathToFileURL(path.join(root, p)).href;
  return `
import http from 'node:http';
import { writeFileSync } from 'node:fs';
import { KubeClient } from ${JSON.stringify(url('packages/shared/dist/src/index.js'))};
import ${JSON.stringify(url('bin/descriptors.js'))};
const server = http.createServer((req, res) => {
  res.setHeader('Content-Type', 'application/json');
  res.end(JSON.stringify({ authorization: req.headers.authorization ?? null }));
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const file = process.argv[2];
writeFileSync(file, JSON.stringify({
  // client-node refuses plain http unless told to skip TLS verification.
  clusters: [{ name: 'c', cluster: { server: 'http://127.0.0.1:' + server.address().port, 'insecure-skip-tls-verify': true } }],
  users: [{ name: 'u', user: ${user} }],
  contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
  'current-context': 'x',
}));
const client = KubeClient.load(file, { qps: 0, burst: 1 });
console.log(JSON.stringify(await client.request('GET', '/version')));
client.close();
server.close();
`;
}

describe('manager start-up imports', function () {
  this.timeout(60_000);
  let dir: string;
  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'topovol-imports-'));
    writeFileSync(path.join(dir, 'hooks.mjs'), HOOKS);
    writeFileSync(path.join(dir, 'register.mjs'), `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(path.join(dir, 'hooks.mjs')).href)});\n`);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  function run(user: string): { stdout: string; loaded: string[]; notInImage: string[]; grpc: string[] } {
    const script = path.join(dir, `child-${Math.random().toString(36).slice(2)}.mjs`);
    writeFileSync(script, child(repoRoot(), user));
    const r = spawnSync(process.execPath, ['--import', path.join(dir, 'register.mjs'), script, path.join(dir, 'kubeconfig')], { encoding: 'utf8' });
    expect(r.status, r.stderr).to.equal(0);
    const lines = r.stderr.split('\n');
    return { stdout: r.stdout.trim(), loaded: lines.filter((l) => l.startsWith('LOADED ')), notInImage: lines.filter((l) => l.startsWith('NOT IN IMAGE ')), grpc: lines.filter((l) => l.startsWith('GRPC ')) };
  }

  it('every loop and a token kubeconfig: client-node is never loaded', function () {
    const { stdout, loaded } = run(`{ token: 'plain-token' }`);
    expect(JSON.parse(stdout)).to.deep.equal({ authorization: 'Bearer plain-token' });
    expect(loaded).to.deep.equal([]);
  });

  it('every loop: the test harness, the manifest renderers and the e2e suite are never loaded', function () {
    expect(run(`{ token: 'plain-token' }`).notInImage).to.deep.equal([]);
  });

  // gRPC and the CSI protobufs are 17% of the graph's load time; only the capacity loop talks to
  // a CSI driver, and it is off unless asked for, so a restarted binder must not wait for them.
  it('every loop registered, none set up: gRPC is not loaded until the capacity loop is', function () {
    expect(run(`{ token: 'plain-token' }`).grpc).to.deep.equal([]);
  });

  it('an exec plugin: client-node is loaded and authenticates (the detector works)', function () {
    const credential = JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1beta1', kind: 'ExecCredential', status: { token: 'exec-token' } });
    const exec = JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1beta1', command: 'echo', args: [credential] });
    const { stdout, loaded } = run(`{ exec: ${exec} }`);
    expect(JSON.parse(stdout)).to.deep.equal({ authorization: 'Bearer exec-token' });
    expect(loaded).to.not.deep.equal([]);
  });
});
