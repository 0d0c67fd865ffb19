import { expect } from 'chai';
import { ControlPlane } from '../../src/control-plane.js';

// hack/skew.sh's result means something only if its control planes are the release it names: a
// run asked for one release and given another's binaries must fail, not pass for it.
describe('a control plane asked for a release (TOPOVOL_K8S_VERSION)', function () {
  this.timeout(180_000);

  it('refuses to start on binaries that report another release, and says which', async function () {
    const saved = process.env.TOPOVOL_K8S_VERSION;
    const cp = new ControlPlane();
    try {
      // Set only after the binaries are found: hack/control-plane-binaries.sh builds pinned releases alone.
      await cp.start();
      const admin = cp.adminClient();
      const actual = (await admin.request<{ gitVersion: string }>('GET', '/version')).gitVersion;
      admin.close();
      await cp.stopApiServer();
      process.env.TOPOVOL_K8S_VERSION = 'v1.0.0';
      const err = await cp.startApiServer().then(() => undefined, (e: unknown) => e);
      expect(String(err)).to.include(`TOPOVOL_K8S_VERSION=v1.0.0, but kube-apiserver`).and.include(`is ${actual}`);
      process.env.TOPOVOL_K8S_VERSION = actual;
      await cp.stopApiServer();
      await cp.startApiServer();
    } finally {
      if (saved === undefined) delete process.env.TOPOVOL_K8S_VERSION;
      else process.env.TOPOVOL_K8S_VERSION = saved;
      await cp.stop();
    }
  });
});
