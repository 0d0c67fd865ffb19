import { spawn } from 'node:child_process';
import path from 'node:path';
import { expect } from 'chai';
import { eventually, freePort, repoRoot } from '../../src/testing/index.js';

// The README's run command (hack/demo.sh runs this after bootstrapping): its own control plane,
// the CRDs and samples, every loop, the CSI test driver, and a readable summary until Ctrl-C.
describe('the demo (README run command)', function () {
  this.timeout(180_000);

  it('binds the sample claim, shows capacity objects and the aggregated status, and stops cleanly on Ctrl-C', async function () {
    const env = { ...process.env, TOPOVOL_DEMO_METRICS_ADDRESS: `127.0.0.1:${await freePort()}`, TOPOVOL_DEMO_PROBE_ADDRESS: `127.0.0.1:${await freePort()}` };
    const demo = spawn(process.execPath, [path.join(repoRoot(), 'packages', 'shared', 'dist', 'src', 'testing', 'local-demo.js')], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    demo.stdout.on('data', (d: Buffer) => (out += d.toString()));
    demo.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => demo.on('exit', resolve));
    try {
      await eventually(
        () => {
          expect(out).to.contain('kubeconfig:      export KUBECONFIG=');
          expect(out).to.match(/default\/demo-claim {2}Bound {2}volume=demo-small/);
          expect(out).to.match(/class=demo-capacity {2}topology\.kubernetes\.io\/zone=zone-a {2}capacity=100Gi/);
          expect(out).to.match(/CSIDriverCapacity demo\.csi\.topovol\.dev: total=120Gi {2}Ready=True/);
        },
        150_000,
        500,
      );
    } finally {
      demo.kill('SIGINT');
    }
    expect(await exited, out.slice(-2000)).to.equal(0);
    expect(out).to.contain('Stopping...');
    expect(out).to.not.contain('manager exited with code');
  });
});
