import { expect } from 'chai';
import { Resources } from '@topovol/shared';
import type { PersistentVolume } from '@topovol/shared';
import { GiB } from '@topovol/testing/csi-test-driver';
import { claim, podWithClaims } from '@topovol/testing';
import { DRIVER, NODE_KEY, NODES } from './e2e-stack.js';
import { Scenario } from './scenario.js';

/** A volume an administrator created on a node beforehand, of the driver's class (pre-provisioned). */
function preProvisioned(name: string, cls: string, node: string): PersistentVolume {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name },
    spec: {
      capacity: { storage: '1Gi' },
      accessModes: ['ReadWriteOnce'],
      persistentVolumeReclaimPolicy: 'Retain',
      storageClassName: cls,
      csi: { driver: DRIVER, volumeHandle: name },
      nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: NODE_KEY, operator: 'In', values: [node] }] }] } },
    },
  };
}

// KEP-490 test plan, "pre-provisioned and dynamic": the scheduler binds what pre-provisioned volumes
// fit and asks for provisioning of the rest, on the node it chose. Topovol's pv-binder hands the
// claim to the external provisioner (volume.kubernetes.io/storage-provisioner), the real
// external-provisioner of that node creates the volume through its CSI driver, the binder binds it.
describe('fallback to dynamic provisioning when pre-provisioned volumes do not fit', function () {
  this.timeout(300_000);
  const s = Scenario.use('e2e-fallback-');

  it('the claim no pre-provisioned PV fits is provisioned on the pod\'s node and bound; the one that fits binds its PV there', async function () {
    const cls = await s.driverClass('csi', Object.fromEntries(NODES.map((n) => [n, 10n * GiB])));
    for (const n of NODES) await s.create(Resources.persistentVolumes, preProvisioned(s.name(`static-${n}`), cls, n));
    await s.available(NODES.map((n) => s.name(`static-${n}`)));
    // kube-scheduler provisions instead while its own cache still has a volume Pending. That cache
    // follows one watch, in resourceVersion order: once it has placed a pod on a probe volume made
    // Available after these, it has seen these Available too.
    const probe = await s.localClass('probe');
    await s.available(await s.localVolumes(probe, 'probe', { [NODES[0]]: 1 }));
    await s.create(Resources.persistentVolumeClaims, claim(s.ns, 'probe', '1Gi', probe));
    await s.create(Resources.pods, podWithClaims(s.ns, 'probe', ['probe']));
    await s.scheduled('probe');
    await s.create(Resources.persistentVolumeClaims, claim(s.ns, 'small', '1Gi', cls));
    await s.create(Resources.persistentVolumeClaims, claim(s.ns, 'big', '5Gi', cls));
    await s.create(Resources.pods, podWithClaims(s.ns, 'app', ['small', 'big']));

    const node = await s.scheduled('app');
    const small = await s.boundOn('small', node);
    expect(small.metadata?.name).to.equal(s.name(`static-${node}`));
    const big = await s.boundOn('big', node);
    const bigClaim = await s.claim('big');
    expect(big.metadata?.name).to.equal(`pvc-${bigClaim.metadata!.uid!}`);
    expect(big.metadata?.annotations?.['pv.kubernetes.io/provisioned-by']).to.equal(DRIVER);
    expect(bigClaim.metadata?.annotations?.['volume.kubernetes.io/storage-provisioner'], 'asked for provisioning by the binder').to.equal(DRIVER);
    // Created by that node's driver, from the class's pool, through its own external-provisioner.
    const made = s.stack.node(node).driver.volumeByName(big.metadata!.name!);
    expect(made?.capacityBytes).to.equal(5n * GiB);
    expect(made?.pool).to.equal(cls);
    for (const other of NODES.filter((n) => n !== node)) {
      expect(s.stack.node(other).driver.volumeByName(big.metadata!.name!), other).to.equal(undefined);
      const left = await s.admin.get<PersistentVolume>(Resources.persistentVolumes, s.name(`static-${other}`));
      expect(left.status?.phase, `pre-provisioned volume on ${other}`).to.equal('Available');
    }
  });
});
