import { expect } from 'chai';
import { projectClaim, Resources } from '@topovol/shared';
import type { CSIStorageCapacity, Event, KubeClient, PersistentVolume, PersistentVolumeClaim } from '@topovol/shared';
import { eventually } from '@topovol/testing';
import type { CsiTestDriver } from '@topovol/testing/csi-test-driver';
import { GiB } from '@topovol/testing/csi-test-driver';
import { CSIDriverCapacities } from '../../src/status/index.js';
import type { CSIDriverCapacity } from '../../src/status/index.js';
import { capacityObjects } from './capacity-harness.js';
import { useCapacityTestbed } from './capacity-testbed.js';
import { poolKeys } from './status-helpers.js';

const ZONE = 'topology.kubernetes.io/zone';
const REGION = 'topology.kubernetes.io/region';

// What a misbehaving driver or cluster must not do to capacity tracking: a hung driver must not
// stop node and class changes, a failing one must not keep its last figure alive, a failed
// provisioning must not leave the figure that misled the scheduler until the next poll, and nodes
// where the driver is not registered (or overlapped by deeper ones) must not get its capacity.
describe('capacity: a hung or failing driver, failed provisioning, unregistered and overlapping nodes (real API server, CSI over gRPC)', function () {
  this.timeout(180_000);
  const tb = useCapacityTestbed('capf-');
  let admin: KubeClient;
  let ns: string;
  let driverName: string;
  let driver: CsiTestDriver;
  beforeEach(() => ({ admin, ns, driverName, driver } = tb));
  const name = (s: string): string => tb.name(s);

  const addNode = (n: string, labels: Record<string, string>, keys?: string[] | 'unregistered'): Promise<void> => tb.addNode(n, labels, keys);
  const register = (n: string, keys: string[]): Promise<void> => tb.register(n, keys);
  const addClass = (c: string): Promise<void> => tb.addClass(c);
  async function addVolume(v: string, cls: string, zone: string): Promise<void> {
    await admin.create<PersistentVolume>(Resources.persistentVolumes, {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: name(v) },
      spec: {
        capacity: { storage: '1Gi' },
        accessModes: ['ReadWriteOnce'],
        storageClassName: name(cls),
        csi: { driver: driverName, volumeHandle: name(v) },
        nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: ZONE, operator: 'In', values: [zone] }] }] } },
      },
    });
    tb.track('pv', name(v));
  }
  const start = async (extra: string[]): Promise<void> => void (await tb.start(extra));
  /** Whether the running loop's claim cache has the claim (so the next change is seen as an update). */
  const loopHasClaim = (c: string): boolean => tb.loop!.informers.forResource<PersistentVolumeClaim>(Resources.persistentVolumeClaims, { transform: projectClaim }).cache.get(`${ns}/${c}`) !== undefined;
  const status = (): Promise<CSIDriverCapacity | undefined> => admin.get<CSIDriverCapacity>(CSIDriverCapacities, driverName).catch(() => undefined);

  it('a hung driver holds no worker: class and node removals still delete their objects while every GetCapacity call hangs', async function () {
    driver.setCapacity({ [ZONE]: 'z1' }, 10n * GiB);
    driver.setCapacity({ [ZONE]: 'z2' }, 20n * GiB);
    await addNode('n1', { [ZONE]: 'z1' });
    await addNode('n2', { [ZONE]: 'z2' });
    await addClass('fast');
    await addClass('slow');
    // As many items as workers (the harness runs 4): on a worker, four hung calls would stall the loop.
    await start(['--capacity-timeout=10m', '--capacity-poll-interval=10m', '--capacity-min-refresh-interval=100ms']);
    await eventually(async () => expect(await capacityObjects(admin, ns)).to.have.length(4));

    driver.injectFailure('GetCapacity', { delayMs: 3_600_000 });
    for (const cls of ['fast', 'slow']) for (const zone of ['z1', 'z2']) await addVolume(`${cls}-${zone}`, cls, zone);
    await eventually(() => expect(driver.stalledCalls, 'every item is being asked again, and hangs').to.equal(4));

    await admin.delete(Resources.storageClasses, name('slow'));
    await eventually(async () => expect((await capacityObjects(admin, ns)).map((o) => o.storageClassName)).to.deep.equal([name('fast'), name('fast')]));
    await admin.delete(Resources.nodes, name('n2'));
    await eventually(async () => expect(await capacityObjects(admin, ns)).to.deep.equal([{ storageClassName: name('fast'), segment: { [ZONE]: 'z1' }, capacity: '10Gi' }]));
    expect(driver.stalledCalls, 'the calls still hang: the deletes did not wait for them').to.be.greaterThan(0);
  });

  it('a failing driver: Ready=False, the last figure\'s expiry is not renewed and its entry goes; the CSIStorageCapacity object keeps the last figure', async function () {
    driver.setCapacity({ [ZONE]: 'z1' }, 7n * GiB);
    await addNode('n1', { [ZONE]: 'z1' });
    await addClass('fast');
    await start(['--capacity-status-expiry=6s', '--capacity-poll-interval=1s', '--capacity-min-refresh-interval=100ms']);
    const pools = (): Promise<string[]> => poolKeys(admin, driverName);
    await eventually(async () => expect(await pools()).to.deep.equal([`${name('fast')}/${ZONE}=z1`]));

    driver.injectFailure('GetCapacity', { code: 14, message: 'backend unreachable' });
    await eventually(async () => {
      const ready = (await status())?.status?.conditions?.find((c) => c.type === 'Ready');
      expect([ready?.status, ready?.reason]).to.deep.equal(['False', 'GetCapacityFailed']);
      expect(ready?.message).to.contain('backend unreachable');
    });
    // Renewing would keep it forever; it lapses one expiry after the last answer.
    await eventually(async () => expect(await pools()).to.deep.equal([]), 60_000, 250);
    expect(await capacityObjects(admin, ns), 'as external-provisioner: the object keeps the last figure').to.deep.equal([{ storageClassName: name('fast'), segment: { [ZONE]: 'z1' }, capacity: '7Gi' }]);

    driver.clearFailures('GetCapacity');
    await eventually(async () => expect(await pools()).to.deep.equal([`${name('fast')}/${ZONE}=z1`]), 60_000, 250);
  });

  it('a slow driver and volumes that keep coming: each answer still reaches the object while the changes last', async function () {
    driver.setCapacity({ [ZONE]: 'z1' }, 30n * GiB);
    await addNode('n1', { [ZONE]: 'z1' });
    await addClass('churn');
    await start(['--capacity-poll-interval=10m', '--capacity-min-refresh-interval=200ms']);
    const figure = async (): Promise<string | undefined> => (await capacityObjects(admin, ns)).find((o) => o.storageClassName === name('churn'))?.capacity;
    await eventually(async () => expect(await figure()).to.equal('30Gi'));
    // Every call takes a second; a volume is created every 100 ms, so one lands during each call
    // and the item is dirty whenever an answer comes back.
    driver.injectFailure('GetCapacity', { delayMs: 1_000 });
    driver.setCapacity({ [ZONE]: 'z1' }, 20n * GiB);
    let churning = true;
    let made = 0;
    const churn = (async (): Promise<void> => {
      while (churning) {
        await addVolume(`churn-${made++}`, 'churn', 'z1');
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();
    try {
      // The churn stops only in `finally`: the figure has to arrive while it runs.
      await eventually(async () => expect(await figure(), 'the new figure, published while volumes still come').to.equal('20Gi'), 60_000, 250);
    } finally {
      churning = false;
      await churn;
      driver.clearFailures('GetCapacity');
    }
  });

  it('a failed provisioning refreshes the capacity it relied on: selected-node removed, or a ProvisioningFailed Event', async function () {
    driver.setCapacity({ [ZONE]: 'z1' }, 10n * GiB);
    driver.setCapacity({ [ZONE]: 'z2' }, 20n * GiB);
    await addNode('n1', { [ZONE]: 'z1' });
    await addNode('n2', { [ZONE]: 'z2' });
    await addClass('fast');
    // The periodic poll is 10 minutes away: only the failure can cause a refresh here.
    await start(['--capacity-poll-interval=10m', '--capacity-min-refresh-interval=100ms']);
    const figures = async (): Promise<string[]> => (await capacityObjects(admin, ns)).map((o) => `${o.segment[ZONE]}=${o.capacity}`);
    await eventually(async () => expect(await figures()).to.deep.equal(['z1=10Gi', 'z2=20Gi']));
    const claim = async (c: string, node: string): Promise<PersistentVolumeClaim> =>
      admin.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: { name: c, namespace: ns, annotations: { 'volume.kubernetes.io/selected-node': name(node) } },
        spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '15Gi' } }, storageClassName: name('fast') },
      });
    // The backend filled up outside Kubernetes, in both zones.
    driver.setCapacity({ [ZONE]: 'z1' }, 1n * GiB);
    driver.setCapacity({ [ZONE]: 'z2' }, 2n * GiB);

    // The provisioner reschedules: it removes selected-node (as after ResourceExhausted). Only z1 is asked again.
    await claim('c1', 'n1');
    await eventually(() => expect(loopHasClaim('c1')).to.equal(true));
    await admin.patch(Resources.persistentVolumeClaims, 'c1', ns, 'merge', { metadata: { annotations: { 'volume.kubernetes.io/selected-node': null } } });
    await eventually(async () => expect(await figures()).to.deep.equal(['z1=1Gi', 'z2=20Gi']));

    // A ProvisioningFailed Event on a claim meant for n2, as external-provisioner records it.
    const c2 = await claim('c2', 'n2');
    await eventually(() => expect(loopHasClaim('c2')).to.equal(true));
    await admin.create<Event>(Resources.events, {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: `c2.${Date.now()}`, namespace: ns },
      involvedObject: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', namespace: ns, name: 'c2', uid: c2.metadata!.uid! },
      reason: 'ProvisioningFailed',
      type: 'Warning',
      message: 'failed to provision volume with StorageClass: rpc error: code = ResourceExhausted desc = no space',
      source: { component: `${driverName}_external-provisioner` },
      count: 1,
      firstTimestamp: new Date().toISOString(),
      lastTimestamp: new Date().toISOString(),
    });
    await eventually(async () => expect(await figures()).to.deep.equal(['z1=1Gi', 'z2=2Gi']));
  });

  it('prefix and domains modes count only nodes where the driver is registered, unless told otherwise', async function () {
    driver.setCapacity({ [REGION]: 'east' }, 5n * GiB);
    driver.setCapacity({ [REGION]: 'west' }, 6n * GiB);
    await addNode('e1', { [REGION]: 'east' }, []);
    await addNode('w1', { [REGION]: 'west' }, 'unregistered');
    await addClass('fast');
    await start(['--capacity-topology=domains', `--domain-labels=${REGION}`, '--capacity-poll-interval=10m', '--capacity-min-refresh-interval=100ms']);
    await eventually(async () => expect(await capacityObjects(admin, ns)).to.deep.equal([{ storageClassName: name('fast'), segment: { [REGION]: 'east' }, capacity: '5Gi' }]));
    await register('w1', []);
    await eventually(async () => expect((await capacityObjects(admin, ns)).map((o) => o.segment[REGION])).to.deep.equal(['east', 'west']));

    await tb.loop!.stop();
    await addNode('s1', { [REGION]: 'south' }, 'unregistered');
    driver.setCapacity({ [REGION]: 'south' }, 1n * GiB);
    await start(['--capacity-topology=domains', `--domain-labels=${REGION}`, '--capacity-count-unregistered-nodes', '--capacity-poll-interval=10m']);
    await eventually(async () => expect((await capacityObjects(admin, ns)).map((o) => o.segment[REGION])).to.deep.equal(['east', 'south', 'west']));
  });

  it('nodes labelled to different depths: the shallower segment\'s object excludes the deeper nodes', async function () {
    driver.setCapacity({ [REGION]: 'east' }, 100n * GiB);
    driver.setCapacity({ [REGION]: 'east', [ZONE]: 'z1' }, 1n * GiB);
    await addNode('deep', { [REGION]: 'east', [ZONE]: 'z1' }, []);
    await addNode('shallow', { [REGION]: 'east' }, []);
    await addClass('fast');
    await start(['--capacity-topology=domains', `--domain-labels=${REGION};${ZONE}`, '--capacity-poll-interval=10m']);
    const selectors = async (): Promise<CSIStorageCapacity['nodeTopology'][]> =>
      (await admin.list<CSIStorageCapacity>(Resources.csiStorageCapacities, { namespace: ns })).items.map((o) => o.nodeTopology).sort((a, b) => Object.keys(a?.matchLabels ?? {}).length - Object.keys(b?.matchLabels ?? {}).length);
    await eventually(async () =>
      expect(await selectors()).to.deep.equal([
        { matchLabels: { [REGION]: 'east' }, matchExpressions: [{ key: ZONE, operator: 'DoesNotExist' }] },
        { matchLabels: { [REGION]: 'east', [ZONE]: 'z1' } },
      ]),
    );
    // The deeper node goes: the region's nodes are all alike again, and its object is replaced by one without the exclusion.
    await admin.delete(Resources.nodes, name('deep'));
    await eventually(async () => expect(await selectors()).to.deep.equal([{ matchLabels: { [REGION]: 'east' } }]));
  });

  it('a node with a gap in its labels (rack without zone) is not excluded from its own segment by the rack it carries', async function () {
    const RACK = 'topology.test.topovol.io/rack';
    driver.setCapacity({ [REGION]: 'east' }, 100n * GiB);
    driver.setCapacity({ [REGION]: 'east', [ZONE]: 'z1', [RACK]: 'r1' }, 1n * GiB);
    await addNode('deep', { [REGION]: 'east', [ZONE]: 'z1', [RACK]: 'r1' }, []);
    await addNode('gapped', { [REGION]: 'east', [RACK]: 'r7' }, []);
    await addClass('fast');
    await start(['--capacity-topology=domains', `--domain-labels=${REGION};${ZONE};${RACK}`, '--capacity-poll-interval=10m']);
    const objects = async (): Promise<CSIStorageCapacity[]> => (await admin.list<CSIStorageCapacity>(Resources.csiStorageCapacities, { namespace: ns })).items;
    // The region's object must match the gapped node (kube-scheduler reads the node's labels): zone
    // excluded (no node of the region segment has one), rack not (the gapped node has one).
    await eventually(async () => {
      const region = (await objects()).find((o) => Object.keys(o.nodeTopology?.matchLabels ?? {}).length === 1);
      expect(region?.nodeTopology).to.deep.equal({ matchLabels: { [REGION]: 'east' }, matchExpressions: [{ key: ZONE, operator: 'DoesNotExist' }] });
    });
  });
});
