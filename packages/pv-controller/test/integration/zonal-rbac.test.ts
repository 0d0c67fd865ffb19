import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { Resources } from '@topovol/shared';
import type { Event, PersistentVolume } from '@topovol/shared';
import { describeRuleNecessity, InProcessLoop, pollUntil } from '@topovol/testing';
import type { NecessityScenario } from '@topovol/testing';
import { zonalPvUpgradeDescriptor } from '../../src/zonal-pv-upgrade-descriptor.js';
import { REASON_CONVERTED, REASON_MALFORMED } from '../../src/zonal/zonal-actuator.js';
import { deleteNow, pv } from './binder-harness.js';

const ZONE = 'topology.kubernetes.io/zone';

/**
 * zonal-pv-upgrade's ClusterRole exercised in one scenario: a zonal PV converted (PV patch and a
 * Converted Event), a malformed one relabelled malformed another way and back (the same Warning
 * again: event patch). Informers cover list/watch of volumes.
 */
const zonalScenario: NecessityScenario = async (client, admin) => {
  const prefix = `rbac-zonal-${randomBytes(3).toString('hex')}`;
  const ac = new AbortController();
  const good = `${prefix}-good`;
  const bad = `${prefix}-bad`;
  await admin.create(Resources.persistentVolumes, pv(good, '1Gi', { class: 'my-class', labels: { [ZONE]: 'z1' } }));
  await admin.create(Resources.persistentVolumes, pv(bad, '1Gi', { class: 'my-class', labels: { [ZONE]: 'a____b' } }));
  const loop = await InProcessLoop.start(zonalPvUpgradeDescriptor, ['--concurrent-workers=1'], { client, waitForSync: false });
  const events = async (name: string, reason: string): Promise<Event[]> =>
    (await admin.list<Event>(Resources.events, { namespace: 'default', fieldSelector: `involvedObject.name=${name},reason=${reason}` })).items;
  const relabel = (value: string) => admin.patch(Resources.persistentVolumes, bad, undefined, 'merge', { metadata: { labels: { [ZONE]: value } } });
  const reached = (async () => {
    await pollUntil(async () => {
      expect((await admin.get<PersistentVolume>(Resources.persistentVolumes, good)).spec?.nodeAffinity).to.not.equal(undefined);
      expect(await events(good, REASON_CONVERTED)).to.have.length(1);
      expect(await events(bad, REASON_MALFORMED)).to.have.length(1);
    }, ac.signal);
    await loop.listed();
    await relabel('x____y');
    await pollUntil(async () => expect(await events(bad, REASON_MALFORMED)).to.have.length(2), ac.signal);
    await relabel('a____b');
    await pollUntil(async () => expect((await events(bad, REASON_MALFORMED)).map((e) => e.count).sort()).to.deep.equal([1, 2]), ac.signal);
  })();
  return {
    reached,
    stop: async () => {
      ac.abort();
      await loop.stop(2_000);
      for (const name of [good, bad]) await deleteNow(admin, Resources.persistentVolumes, name).catch(() => undefined);
    },
  };
};

describeRuleNecessity(zonalPvUpgradeDescriptor, zonalScenario);
