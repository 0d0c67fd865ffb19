import { expect } from 'chai';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { repoRoot } from '../../src/repo-root.js';

// hack/control-plane-binaries.sh builds one release at a time under a lock in its cache. A test
// run whose binaries are all cached must not wait on it: a skew run building an older release
// beside a test run once held a test that starts kube-controller-manager past its timeout.
describe('hack/control-plane-binaries.sh: the build lock', function () {
  this.timeout(60_000);
  const script = path.join(repoRoot(), 'hack', 'control-plane-binaries.sh');
  let cache: string;
  beforeEach(function () {
    if (spawnSync('flock', ['--version']).status !== 0 || spawnSync('go', ['version']).status !== 0) this.skip();
    cache = mkdtempSync(path.join(os.tmpdir(), 'cpb-lock-'));
    // A release whose binaries are all there (as built: executable, moved into place whole).
    mkdirSync(path.join(cache, 'k8s-v1.37.2'));
    for (const b of ['etcd', 'kube-apiserver']) {
      writeFileSync(path.join(cache, 'k8s-v1.37.2', b), '#!/bin/sh\n');
      chmodSync(path.join(cache, 'k8s-v1.37.2', b), 0o755);
    }
  });
  afterEach(() => rmSync(cache, { recursive: true, force: true }));

  it('answers with cached binaries while another build holds the lock', async function () {
    // Another run's build holds the lock until this test ends.
    const lock = path.join(cache, '.build.lock');
    const holder = spawn('flock', [lock, 'sleep', '600'], { stdio: 'ignore' });
    try {
      // Until the holder has it (a try-lock fails), or the script would meet no lock at all.
      while (spawnSync('flock', ['-n', lock, 'true']).status === 0) await new Promise((r) => setTimeout(r, 50));
      const env: NodeJS.ProcessEnv = { ...process.env, TOPOVOL_CACHE_DIR: cache, TOPOVOL_K8S_VERSION: 'v1.37.2' };
      delete env.KUBEBUILDER_ASSETS;
      const out = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
        // Killed if it waits for the lock (it would wait as long as the holder), so the test fails, not hangs.
        const p = spawn('bash', [script, 'etcd', 'kube-apiserver'], { env, stdio: ['ignore', 'pipe', 'ignore'], timeout: 30_000 });
        let stdout = '';
        p.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
        p.on('exit', (code) => resolve({ code, stdout }));
      });
      expect(out.code, 'waited for the lock another build holds').to.equal(0);
      expect(out.stdout.trim().split('\n')).to.deep.equal([
        `etcd v3.6.16 ${cache}/k8s-v1.37.2/etcd`,
        `kube-apiserver v1.37.2 ${cache}/k8s-v1.37.2/kube-apiserver`,
        `${cache}/k8s-v1.37.2`,
      ]);
    } finally {
      holder.kill();
    }
  });
});
