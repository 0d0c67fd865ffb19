import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { expect } from 'chai';
import { KubeClient, Resources } from '@topovol/shared';
import type { Event, PersistentVolume, PersistentVolumeClaim, Pod } from '@topovol/shared';
import { eventually, repoRoot, volumeTopology } from '../../src/index.js';

const NODE_KEY = 'topology.demo.csi.topovol.dev/node';

// The README's run command (hack/demo.sh runs this after bootstrapping): the real storage stack and
// the story of what Topovol is for. Its end state is checked on the demo's own API server.
describe('the demo (README run command)', function () {
  this.timeout(600_000);

  it('tells the story step by step, ends with every claim Bound where the story says, and stops cleanly on Ctrl-C', async function () {
    const demo = spawn(process.execPath, [path.join(repoRoot(), 'packages', 'testing', 'dist', 'src', 'local-demo.js')], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    demo.stdout.on('data', (d: Buffer) => (out += d.toString()));
    demo.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => demo.on('exit', resolve));
    let admin: KubeClient | undefined;
    try {
      // A cold build of kube-scheduler, kube-controller-manager and csi-provisioner takes minutes.
      await eventually(() => expect(out, out.slice(-3000)).to.match(/Steady state: all \d+ claims are Bound\./), 540_000, 500);
      for (const step of ['1. Delayed binding', '2. Capacity tracking', '3. Provisioning rollback', '4. Zonal upgrade']) expect(out).to.contain(step);
      expect(out).to.not.contain('The story stopped');
      const kubeconfig = /export KUBECONFIG=(\S+)/.exec(out)?.[1];
      const kc = new KubeConfig();
      kc.loadFromFile(kubeconfig!);
      admin = KubeClient.fromKubeConfig(kc, { qps: 0, burst: 1 });
      const pods = new Map((await admin.list<Pod>(Resources.pods, { namespace: 'demo' })).items.map((p) => [p.metadata?.name, p.spec?.nodeName]));
      const nodeOf = async (claim: string): Promise<string | undefined> => {
        const c = await admin!.get<PersistentVolumeClaim>(Resources.persistentVolumeClaims, claim, 'demo');
        expect(c.status?.phase, claim).to.equal('Bound');
        return volumeTopology(await admin!.get<PersistentVolume>(Resources.persistentVolumes, c.spec!.volumeName!), NODE_KEY);
      };
      // 1: the claim follows its pod. 2: the full node is avoided. 3: moved to node 2 after a rollback. 4: zone-a only.
      expect(await nodeOf('web-data')).to.equal(pods.get('web'));
      expect(pods.get('big')).to.not.equal('demo-node-3');
      expect(await nodeOf('big-data')).to.equal(pods.get('big'));
      expect(pods.get('app')).to.equal('demo-node-2');
      for (const c of ['data-0', 'data-1']) expect(await nodeOf(c), c).to.equal('demo-node-2');
      const rollbacks = (await admin.list<Event>(Resources.events, { namespace: 'demo', fieldSelector: 'reason=ProvisioningRollbackCompleted' })).items;
      expect(rollbacks.length).to.be.at.least(1);
      expect(pods.get('legacy-app')).to.equal('demo-node-1');
      const legacy = await admin.get<PersistentVolumeClaim>(Resources.persistentVolumeClaims, 'legacy-data', 'demo');
      expect(legacy.spec?.volumeName).to.equal('demo-legacy-zonal');
      const all = (await admin.list<PersistentVolumeClaim>(Resources.persistentVolumeClaims)).items;
      expect(all.filter((c) => c.status?.phase !== 'Bound').map((c) => c.metadata?.name)).to.deep.equal([]);
    } finally {
      admin?.close();
      demo.kill('SIGINT');
    }
    expect(await exited, out.slice(-2000)).to.equal(0);
    expect(out).to.contain('Stopping...');
    // The demo keeps its logs for the user; the test does not need them.
    const logs = /Logs: (\S+)/.exec(out)?.[1];
    if (logs?.startsWith(os.tmpdir()) && !process.env.TOPOVOL_KEEP_TEST_DIRS) rmSync(logs, { recursive: true, force: true });
  });
});
