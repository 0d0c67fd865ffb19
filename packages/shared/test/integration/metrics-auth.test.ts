import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import path from 'node:path';
import { connect } from 'node:tls';
import type { PeerCertificate } from 'node:tls';
import { expect } from 'chai';
import { Resources, selfSignedCert } from '../../src/index.js';
import type { KubeClient } from '../../src/index.js';
import { createTestNamespace, eventually, httpGet, metricsReader, sharedControlPlane } from '@topovol/testing';
import type { ControlPlane } from '@topovol/testing';
import type { EchoManager } from './manager-process.js';
import { sample, startEchoManager } from './manager-process.js';

/** The certificate the port serves (not checked: the point is to see which one it is). */
async function servedCert(port: number): Promise<PeerCertificate> {
  const socket = connect({ host: '127.0.0.1', port, rejectUnauthorized: false, servername: 'localhost' });
  await once(socket, 'secureConnect');
  const cert = socket.getPeerCertificate();
  socket.destroy();
  return cert;
}

function writePair(dir: string, cert: string, key: string): void {
  // A Secret volume swaps both files at once; two writes here are the harder case (a pair that does not match for a moment).
  writeFileSync(path.join(dir, 'tls.crt'), cert);
  writeFileSync(path.join(dir, 'tls.key'), key);
}

/**
 * A Secret volume as the kubelet writes it (pkg/volume/util/atomic_writer.go): the files in a
 * timestamped directory, `..data` a symlink to it, each key a symlink through `..data`; an update
 * writes a new directory and renames a new `..data` over the old one, so both files change at once.
 */
function writeSecretVolume(dir: string, generation: number, cert: string, key: string): void {
  const data = `..2026_12_04_00_00_0${generation}.${process.pid}`;
  mkdirSync(path.join(dir, data));
  writeFileSync(path.join(dir, data, 'tls.crt'), cert);
  writeFileSync(path.join(dir, data, 'tls.key'), key);
  symlinkSync(data, path.join(dir, '..data_tmp'));
  renameSync(path.join(dir, '..data_tmp'), path.join(dir, '..data'));
  if (generation === 1) for (const f of ['tls.crt', 'tls.key']) symlinkSync(path.join('..data', f), path.join(dir, f));
  else rmSync(path.join(dir, `..2026_12_04_00_00_0${generation - 1}.${process.pid}`), { recursive: true });
}

// --metrics-secure (the default): kube-controller-manager's secure port and controller-runtime's
// secure metrics, against the real kube-apiserver's TokenReview and SubjectAccessReview, with
// ServiceAccount tokens as the kubelet mounts them and the shipped topovol-metrics-reader ClusterRole.
describe('metrics endpoint: HTTPS, TokenReview and SubjectAccessReview by the API server', function () {
  this.timeout(120_000);
  let cp: ControlPlane;
  let admin: KubeClient;
  let ns: string;
  let m: EchoManager;
  let reader: string;
  let nobody: string;
  const url = (port: number): string => `https://127.0.0.1:${port}/metrics`;

  before(async function () {
    cp = await sharedControlPlane();
    admin = cp.adminClient();
    ns = await createTestNamespace(admin, 'metrics-auth-');
    ({ token: reader } = await metricsReader(cp, ns, 'scraper'));
    await admin.create(Resources.serviceAccounts, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'nobody', namespace: ns } });
    nobody = await cp.serviceAccountToken(ns, 'nobody');
    m = await startEchoManager(cp, `mgr-${ns}`, ['--metrics-secure=true', `--leader-elect-namespace=${ns}`]);
    await eventually(async () => expect((await httpGet(`http://127.0.0.1:${m.probePort}/readyz`)).status, m.proc.logTail(10)).to.equal(200), 60_000);
  });
  after(async function () {
    await m?.proc.stop();
    await admin?.delete(Resources.clusterRoleBindings, `${ns}-scraper`).catch(() => undefined);
  });

  it('answers a reader 200, a ServiceAccount without the role 403, a forged or missing token 401; counts each', async function () {
    const ok = await httpGet(url(m.metricsPort), { token: reader });
    expect(ok.status, ok.body).to.equal(200);
    expect(ok.body).to.contain('# TYPE workqueue_depth gauge');
    const denied = await httpGet(url(m.metricsPort), { token: nobody });
    expect(denied.status).to.equal(403);
    expect(denied.body).to.contain(`User "system:serviceaccount:${ns}:nobody" cannot get path "/metrics"`);
    expect(denied.body).to.not.contain('workqueue');
    for (const token of [undefined, 'forged', reader.slice(0, -4) + 'AAAA']) {
      const res = await httpGet(url(m.metricsPort), token ? { token } : {});
      expect(res.status, String(token)).to.equal(401);
      expect(res.body).to.not.contain('workqueue');
    }
    const after = (await httpGet(url(m.metricsPort), { token: reader })).body;
    expect(sample(after, 'topovol_metrics_auth_total', { result: 'allowed' })).to.be.at.least(1);
    expect(sample(after, 'topovol_metrics_auth_total', { result: 'forbidden' })).to.be.at.least(1);
    expect(sample(after, 'topovol_metrics_auth_total', { result: 'unauthenticated' })).to.be.at.least(3);
    // Said in the log once per reason, not per scrape.
    expect(readFileSync(m.proc.logFile, 'utf8')).to.match(/metrics request refused.*403/);
  });

  it('a reader whose binding is deleted is refused once the cached verdict expires', async function () {
    expect((await httpGet(url(m.metricsPort), { token: reader })).status).to.equal(200);
    await admin.delete(Resources.clusterRoleBindings, `${ns}-scraper`);
    await eventually(async () => expect((await httpGet(url(m.metricsPort), { token: reader })).status).to.equal(403), 60_000, 1_000);
  });

  it('serves a self-signed certificate for localhost and 127.0.0.1; plain HTTP gets no metrics; the probes stay plain HTTP without a token', async function () {
    const cert = await servedCert(m.metricsPort);
    expect(cert.subject.CN).to.match(/^topovol-controller-manager@\d+$/);
    expect(cert.issuer.CN).to.equal(cert.subject.CN);
    expect(cert.subjectaltname).to.contain('DNS:localhost').and.to.contain('IP Address:127.0.0.1');
    const plain = await httpGet(`http://127.0.0.1:${m.metricsPort}/metrics`).catch((err: Error) => ({ status: 0, body: err.message }));
    expect(plain.body).to.not.contain('workqueue');
    expect((await httpGet(`http://127.0.0.1:${m.probePort}/healthz`)).status).to.equal(200);
  });

  it('--metrics-cert-path: serves that pair, and a renewed one without a restart; a pair that does not match is not served', async function () {
    const dir = mkdtempSync(path.join(cp.dir, 'metrics-cert-'));
    const first = selfSignedCert({ commonName: 'first', hosts: ['localhost'] });
    writePair(dir, first.cert, first.key);
    const withCert = await startEchoManager(cp, `mgr-cert-${ns}`, ['--metrics-secure=true', `--metrics-cert-path=${dir}`, `--leader-elect-namespace=${ns}`]);
    try {
      await eventually(async () => expect((await servedCert(withCert.metricsPort)).subject.CN).to.equal('first'), 60_000);
      const second = selfSignedCert({ commonName: 'second', hosts: ['localhost'] });
      writePair(dir, second.cert, second.key);
      await eventually(async () => expect((await servedCert(withCert.metricsPort)).subject.CN).to.equal('second'), 60_000, 1_000);
      // A certificate with another pair's key: refused when loaded, the served one stays.
      writePair(dir, selfSignedCert({ commonName: 'third', hosts: ['localhost'] }).cert, second.key);
      await eventually(() => expect(readFileSync(withCert.proc.logFile, 'utf8')).to.contain('cannot load the metrics serving certificate'), 60_000, 1_000);
      expect((await servedCert(withCert.metricsPort)).subject.CN).to.equal('second');
      expect(withCert.proc.running).to.equal(true);
    } finally {
      await withCert.proc.stop();
    }
  });

  it('--metrics-cert-path on a Secret volume (the chart\'s metrics.certSecretName): serves the pair, and the renewed one the kubelet swaps in', async function () {
    const dir = mkdtempSync(path.join(cp.dir, 'metrics-secret-'));
    const first = selfSignedCert({ commonName: 'mounted-first', hosts: ['localhost'] });
    writeSecretVolume(dir, 1, first.cert, first.key);
    // A reader of its own: the test above removes the first one's binding.
    const { token: mountedReader, binding } = await metricsReader(cp, ns, 'mounted-scraper');
    const mounted = await startEchoManager(cp, `mgr-secret-${ns}`, ['--metrics-secure=true', `--metrics-cert-path=${dir}`, `--leader-elect-namespace=${ns}`]);
    try {
      await eventually(async () => expect((await servedCert(mounted.metricsPort)).subject.CN).to.equal('mounted-first'), 60_000);
      const second = selfSignedCert({ commonName: 'mounted-second', hosts: ['localhost'] });
      writeSecretVolume(dir, 2, second.cert, second.key);
      await eventually(async () => expect((await servedCert(mounted.metricsPort)).subject.CN).to.equal('mounted-second'), 60_000, 1_000);
      // Still reviewed: the certificate changes what is served, not who may read it.
      expect((await httpGet(url(mounted.metricsPort), { token: mountedReader })).status).to.equal(200);
      expect((await httpGet(url(mounted.metricsPort), {})).status).to.equal(401);
      expect(readFileSync(mounted.proc.logFile, 'utf8')).to.not.contain('cannot load the metrics serving certificate');
    } finally {
      await mounted.proc.stop();
      await admin.delete(Resources.clusterRoleBindings, binding).catch(() => undefined);
    }
  });

  it('--metrics-cert-path naming a directory without a pair: exits 1 at start, saying which file', async function () {
    const empty = path.join(cp.dir, `metrics-cert-empty-${ns}`);
    mkdirSync(empty, { recursive: true });
    const bad = await startEchoManager(cp, `mgr-bad-cert-${ns}`, ['--metrics-secure=true', `--metrics-cert-path=${empty}`, `--leader-elect-namespace=${ns}`]);
    expect(await bad.proc.waitForExit()).to.equal(1);
    expect(readFileSync(bad.proc.logFile, 'utf8')).to.contain('cannot serve HTTP endpoints').and.to.contain(path.join(empty, 'tls.crt'));
  });
});
