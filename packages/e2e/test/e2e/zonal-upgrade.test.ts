import { expect } from 'chai';
import { Resources } from '@topovol/shared';
import type { PersistentVolume } from '@topovol/shared';
import { claim, eventsAbout, podWithClaims, preferNodes, ZONE } from '@topovol/testing';
import { NODE_1, REGION_NAME } from './e2e-stack.js';
import { Scenario } from './scenario.js';

const BETA_ZONE = 'failure-domain.beta.kubernetes.io/zone';
const BETA_REGION = 'failure-domain.beta.kubernetes.io/region';

/** A volume from before PV node affinity: placed only by its (beta) zone and region labels. */
function legacyZonalVolume(name: string, cls: string, zone: string): PersistentVolume {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name, labels: { [BETA_ZONE]: zone, [BETA_REGION]: REGION_NAME } },
    spec: {
      capacity: { storage: '10Gi' },
      accessModes: ['ReadWriteOnce'],
      persistentVolumeReclaimPolicy: 'Retain',
      storageClassName: cls,
      csi: { driver: 'legacy-disk.example.com', volumeHandle: name },
    },
  };
}

// KEP-490 "Zonal PV Upgrade": the scheduler's VolumeZone filter skips unbound delayed-binding claims
// (pkg/scheduler/framework/plugins/volumezone/volume_zone.go), and its VolumeBinding plugin matches
// PVs by node affinity only, so a legacy PV without one could be pre-bound on a node of any zone.
// Topovol's zonal-pv-upgrade loop writes the equivalent spec.nodeAffinity; then the real scheduler
// places a pod using it only in the PV's zone, here against the pod's own preference.
describe('zonal upgrade of legacy PVs', function () {
  this.timeout(300_000);
  const s = Scenario.use('e2e-zonal-');

  it('a legacy zone-a PV gets the matching node affinity, and a pod using it is scheduled only into zone-a', async function () {
    const cls = await s.localClass('legacy');
    const name = s.name('disk');
    await s.create(Resources.persistentVolumes, legacyZonalVolume(name, cls, 'zone-a'));
    const upgraded = await s.until('the PV upgraded, with its Event', async () => {
      const pv = await s.admin.get<PersistentVolume>(Resources.persistentVolumes, name);
      expect(pv.spec?.nodeAffinity, 'nodeAffinity').to.not.equal(undefined);
      const [converted] = await eventsAbout(s.admin, 'default', 'PersistentVolume', name, 'ZonalLabelsConverted');
      expect(converted, 'ZonalLabelsConverted Event').to.not.equal(undefined);
      return pv;
    });
    // The labels stay; the affinity admits zone-a nodes only (by either label generation).
    expect(upgraded.metadata?.labels).to.include({ [BETA_ZONE]: 'zone-a', [BETA_REGION]: REGION_NAME });
    const terms = JSON.stringify(upgraded.spec?.nodeAffinity);
    expect(terms).to.contain('zone-a').and.not.contain('zone-b');

    await s.create(Resources.persistentVolumeClaims, claim(s.ns, 'data', '10Gi', cls));
    await s.create(Resources.pods, podWithClaims(s.ns, 'app', ['data'], { affinity: preferNodes(ZONE, 'zone-b') }));
    expect(await s.scheduled('app')).to.equal(NODE_1);
    const c = await s.until('claim bound', async () => {
      const x = await s.claim('data');
      expect(x.status?.phase).to.equal('Bound');
      return x;
    });
    expect(c.spec?.volumeName).to.equal(name);
  });
});
