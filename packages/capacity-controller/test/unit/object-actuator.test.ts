import { expect } from 'chai';
import { KubeApiError, quantityBytes, Resources } from '@topovol/shared';
import type { CSIStorageCapacity, KubeObject, ResourceType } from '@topovol/shared';
import { itemKey } from '../../src/objects/capacity-item.js';
import type { CapacityItem } from '../../src/objects/capacity-item.js';
import { newCapacityObject } from '../../src/objects/capacity-object.js';
import type { ObjectIdentity } from '../../src/objects/capacity-object.js';
import { ITEM_TARGET, ObjectActuator, PENDING_TRUST_MS } from '../../src/objects/object-actuator.js';
import type { CapacityObjectWriter } from '../../src/objects/object-actuator.js';
import { FakeObjectStore, testContext } from './capacity-fakes.js';

const DRIVER = 'test.csi.topovol.io';
const NS = 'topovol-system';
const GiB = 1n << 30n;
const id: ObjectIdentity = { driverName: DRIVER, managedBy: 'topovol-capacity', namespace: NS };
const item: CapacityItem = { storageClassName: 'fast', segment: { 'topology.test/node': 'n1' }, pool: '' };
const R = Resources.csiStorageCapacities;

/** The store's objects as (name, capacity) pairs, the end state the actuator is judged by. */
const capacities = (store: FakeObjectStore): [string | undefined, bigint | undefined][] => store.list<CSIStorageCapacity>(R).map((o) => [o.metadata?.name, quantityBytes(o.capacity)]);

describe('capacity ObjectActuator (writes of CSIStorageCapacity objects)', function () {
  let store: FakeObjectStore;
  let replans: number;
  let retried: string[];
  let now: number;
  const actuator = (dryRun = false): ObjectActuator => new ObjectActuator(store, NS, { replan: () => replans++, retryItem: (k) => retried.push(k), refused: () => undefined, cleared: () => undefined }, dryRun, () => now);
  const seeded = (capacity: bigint): CSIStorageCapacity => {
    const o = newCapacityObject(id, item, { available: capacity });
    return store.seed(R, { ...o, metadata: { ...o.metadata, name: 'csisc-a' } });
  };

  beforeEach(function () {
    store = new FakeObjectStore();
    replans = 0;
    retried = [];
    now = 1_000_000;
  });

  it('create: the store holds the new object, and it is pending until the informer shows it', async function () {
    const a = actuator();
    await a.execute(testContext(), { kind: 'create', item, object: newCapacityObject(id, item, { available: 5n * GiB }) });
    const [obj] = store.list<CSIStorageCapacity>(R);
    expect(capacities(store)).to.deep.equal([[obj?.metadata?.name, 5n * GiB]]);
    expect(obj?.metadata?.namespace).to.equal(NS);
    expect(a.pending(itemKey(item))?.metadata?.name).to.equal(obj?.metadata?.name);
    a.seen(itemKey(item), obj?.metadata?.name);
    expect(a.pending(itemKey(item))).to.equal(undefined);
  });

  it('update: the object takes the new figure under its precondition; one deleted meanwhile is left for the create that follows', async function () {
    const old = seeded(5n * GiB);
    await actuator().execute(testContext(), { kind: 'update', item, object: { ...old, capacity: '7Gi' }, changed: ['capacity'] });
    expect(capacities(store)).to.deep.equal([['csisc-a', 7n * GiB]]);
    expect(store.list<CSIStorageCapacity>(R)[0]?.metadata?.resourceVersion).not.to.equal(old.metadata?.resourceVersion);

    await store.delete(R, 'csisc-a', NS);
    await actuator().execute(testContext(), { kind: 'update', item, object: { ...old, capacity: '9Gi' }, changed: ['capacity'] });
    expect(capacities(store)).to.deep.equal([]);
    expect(retried, "the informer's delete event plans it again").to.deep.equal([]);
  });

  it('update: an object it created that was deleted before the informer showed it is forgotten, and its item planned again', async function () {
    const a = actuator();
    await a.execute(testContext(), { kind: 'create', item, object: newCapacityObject(id, item, { available: 5n * GiB }) });
    const created = a.pending(itemKey(item))!;
    await store.delete(R, created.metadata!.name!, NS);
    await a.execute(testContext(), { kind: 'update', item, object: { ...created, capacity: '7Gi' }, changed: ['capacity'] });
    expect(a.pending(itemKey(item)), 'no longer taken for an existing object').to.equal(undefined);
    expect(retried).to.deep.equal([itemKey(item)]);
  });

  it('a created object the informer has not shown is trusted for PENDING_TRUST_MS, then planned as missing', async function () {
    const a = actuator();
    await a.execute(testContext(), { kind: 'create', item, object: newCapacityObject(id, item, { available: 5n * GiB }) });
    now += PENDING_TRUST_MS;
    expect(a.pending(itemKey(item)), 'within the trust period').to.not.equal(undefined);
    now += 1;
    expect(a.pending(itemKey(item)), 'after it').to.equal(undefined);
  });

  it('update: a stale resourceVersion is refused and fails the reconcile (retried on fresh data)', async function () {
    const old = seeded(5n * GiB);
    await store.replace(R, { ...old, capacity: '6Gi' });
    let failed: unknown;
    await actuator()
      .execute(testContext(), { kind: 'update', item, object: { ...old, capacity: '7Gi' }, changed: ['capacity'] })
      .catch((err: unknown) => (failed = err));
    expect(failed).to.have.property('code', 409);
    expect(capacities(store)).to.deep.equal([['csisc-a', 6n * GiB]]);
  });

  it('delete: the object goes; one already gone is fine', async function () {
    const old = seeded(5n * GiB);
    await actuator().execute(testContext(), { kind: 'delete', object: old, why: 'obsolete' });
    expect(capacities(store)).to.deep.equal([]);
    await actuator().execute(testContext(), { kind: 'delete', object: old, why: 'obsolete' });
    expect(capacities(store)).to.deep.equal([]);
    expect(replans).to.equal(0);
  });

  it('delete: an object it created and the informer never showed is remembered no more once deleted, or found gone (no 404 DELETE at every refresh)', async function () {
    for (const deletedBehind of [false, true]) {
      const a = actuator();
      await a.execute(testContext(), { kind: 'create', item, object: newCapacityObject(id, item, { available: 5n * GiB }) });
      const created = a.pending(itemKey(item))!;
      if (deletedBehind) await store.delete(R, created.metadata!.name!, NS);
      await a.execute(testContext(), { kind: 'delete', object: created, why: 'duplicate' });
      expect(a.pending(itemKey(item)), deletedBehind ? 'found gone' : 'deleted').to.equal(undefined);
      expect(capacities(store)).to.deep.equal([]);
    }
  });

  it('delete: an object changed since it was planned is kept, and the loop decides again', async function () {
    const old = seeded(5n * GiB);
    await store.replace(R, { ...old, capacity: '6Gi' });
    await actuator().execute(testContext(), { kind: 'delete', object: old, why: 'duplicate' });
    expect(capacities(store)).to.deep.equal([['csisc-a', 6n * GiB]]);
    expect(replans).to.equal(1);
  });

  it('dry run: no action writes anything', async function () {
    const old = seeded(5n * GiB);
    const a = actuator(true);
    await a.execute(testContext(), { kind: 'create', item, object: newCapacityObject(id, item, { available: 1n * GiB }) });
    await a.execute(testContext(), { kind: 'update', item, object: { ...old, capacity: '7Gi' }, changed: ['capacity'] });
    await a.execute(testContext(), { kind: 'delete', object: old, why: 'obsolete' });
    expect(capacities(store)).to.deep.equal([['csisc-a', 5n * GiB]]);
    expect(store.list<CSIStorageCapacity>(R)[0]?.metadata?.resourceVersion).to.equal(old.metadata?.resourceVersion);
    expect(a.pending(itemKey(item))).to.equal(undefined);
  });
  describe('writes denied by authorization (the namespaced role not bound in --capacity-namespace)', function () {
    const denied = (verb: string): KubeApiError =>
      KubeApiError.fromResponse(403, JSON.stringify({ kind: 'Status', status: 'Failure', code: 403, reason: 'Forbidden', message: `csistoragecapacities.storage.k8s.io is forbidden: User "system:serviceaccount:topovol-system:topovol-capacity" cannot ${verb} resource "csistoragecapacities" in API group "storage.k8s.io" in the namespace "${NS}"` }));
    const quota = (): KubeApiError => KubeApiError.fromResponse(403, JSON.stringify({ kind: 'Status', status: 'Failure', code: 403, reason: 'Forbidden', message: 'csistoragecapacities.storage.k8s.io "csisc-x" is forbidden: exceeded quota: q, requested: count/csistoragecapacities.storage.k8s.io=1' }));
    let deny: ((verb: string) => KubeApiError | undefined) | undefined;
    let reports: string[];
    let counted: number;
    let cleared: number;
    const item2: CapacityItem = { ...item, pool: 'p2' };
    const gated = (): ObjectActuator => {
      const gate = <T>(verb: string, write: () => Promise<T>): Promise<T> => {
        const err = deny?.(verb);
        return err ? Promise.reject(err) : write();
      };
      const writer: CapacityObjectWriter = {
        create: <T extends KubeObject>(r: ResourceType, o: T): Promise<T> => gate('create', () => store.create(r, o)),
        replace: <T extends KubeObject>(r: ResourceType, o: T): Promise<T> => gate('update', () => store.replace(r, o)),
        delete: (r, name, ns, opts) => gate('delete', () => store.delete(r, name, ns, opts)),
      };
      return new ObjectActuator(writer, NS, { replan: () => undefined, retryItem: () => undefined, refused: (m, _verb, first) => void (counted++, first && reports.push(m)), cleared: () => void cleared++ }, false, () => now);
    };
    const create = (a: ObjectActuator, it: CapacityItem): Promise<unknown> => a.execute(testContext(), { kind: 'create', item: it, object: newCapacityObject(id, it, { available: GiB }) }).catch((e: unknown) => e);
    beforeEach(function () {
      deny = undefined;
      reports = [];
      counted = 0;
      cleared = 0;
    });

    it('each denial is counted and thrown for the runner to retry; the first of an episode is reported, with the binding to make', async function () {
      const a = gated();
      deny = denied;
      for (let i = 0; i < 3; i++) expect(await create(a, item)).to.be.instanceOf(KubeApiError);
      expect([counted, reports.length]).to.deep.equal([3, 1]);
      expect(reports[0]).to.contain(`create in namespace ${NS} refused`).and.contain('cannot create resource "csistoragecapacities"').and.contain('topovol-capacity-namespaced');
      expect(a.refusal).to.equal(reports[0]);
      expect(capacities(store)).to.deep.equal([]);
    });

    it("OwnerReferencesPermissionEnforcement's refusal (a role without delete, when an object's owner changes) is a denial too, with the same binding to make", async function () {
      const a = gated();
      const ownerRefDenied = (detail: string) => (): KubeApiError =>
        KubeApiError.fromResponse(403, JSON.stringify({ kind: 'Status', status: 'Failure', code: 403, reason: 'Forbidden', message: `csistoragecapacities.storage.k8s.io "csisc-x" is forbidden: ${detail}` }));
      deny = ownerRefDenied(`cannot set an ownerRef on a resource you can't delete: RBAC: role.rbac.authorization.k8s.io "custom" not found, <nil>`);
      expect(await create(a, item)).to.be.instanceOf(KubeApiError);
      expect([counted, reports.length]).to.deep.equal([1, 1]);
      expect(reports[0]).to.contain("can't delete").and.contain('topovol-capacity-namespaced');
      deny = ownerRefDenied('cannot set blockOwnerDeletion if an ownerReference refers to a resource you can\'t set finalizers on: , <nil>');
      expect(await create(a, item2)).to.be.instanceOf(KubeApiError);
      expect(counted).to.equal(2);
    });

    it('any other refusal (an exceeded quota, a webhook or policy, validation) is a refusal too, with the server\'s message and no advice to bind a role', async function () {
      const refusals: (() => KubeApiError)[] = [
        quota,
        () => KubeApiError.fromResponse(422, JSON.stringify({ kind: 'Status', status: 'Failure', code: 422, reason: 'Invalid', message: 'csistoragecapacities.storage.k8s.io "csisc-x" is invalid: ValidatingAdmissionPolicy \'no-capacity\' denied request' })),
        () => KubeApiError.fromResponse(400, JSON.stringify({ kind: 'Status', status: 'Failure', code: 400, reason: 'BadRequest', message: 'admission webhook "capacity.example.com" denied the request' })),
      ];
      for (const [i, refuse] of refusals.entries()) {
        const a = gated();
        deny = () => refuse();
        expect(await create(a, item)).to.be.instanceOf(KubeApiError);
        expect(counted, String(i)).to.equal(i + 1);
        expect(a.refusal, String(i)).to.contain(refuse().message).and.not.contain('topovol-capacity-namespaced');
        // Settled like a denial once the write goes through.
        deny = undefined;
        await create(a, item);
        expect(a.refusal, String(i)).to.equal(undefined);
      }
    });

    it('a server error, a conflict or a namespace being deleted is no refusal: a plain error, retried', async function () {
      const plain = [
        KubeApiError.fromResponse(500, JSON.stringify({ kind: 'Status', status: 'Failure', code: 500, reason: 'InternalError', message: 'etcdserver: leader changed' })),
        KubeApiError.fromResponse(409, JSON.stringify({ kind: 'Status', status: 'Failure', code: 409, reason: 'AlreadyExists', message: 'csistoragecapacities.storage.k8s.io "csisc-x" already exists' })),
        KubeApiError.fromResponse(403, JSON.stringify({ kind: 'Status', status: 'Failure', code: 403, reason: 'Forbidden', message: `csistoragecapacities.storage.k8s.io "csisc-x" is forbidden: unable to create new content in namespace ${NS} because it is being terminated`, details: { name: NS, kind: 'namespaces', causes: [{ reason: 'NamespaceTerminating', field: 'metadata.namespace' }] } })),
      ];
      for (const [i, err] of plain.entries()) {
        const a = gated();
        deny = () => err;
        expect(await create(a, item), String(i)).to.be.instanceOf(KubeApiError);
        expect([counted, a.refusal], String(i)).to.deep.equal([0, undefined]);
      }
    });

    it("a target's denial ends when its own write goes through, not when another target's does; the episode's end is signalled once", async function () {
      const a = gated();
      deny = denied;
      await create(a, item);
      await create(a, item2);
      deny = undefined;
      await create(a, item2);
      expect(a.refusal, "item's create is still owed").to.not.equal(undefined);
      expect(cleared).to.equal(0);
      await create(a, item);
      expect([a.refusal, cleared]).to.deep.equal([undefined, 1]);
      // A later denial is a new episode, reported again.
      deny = denied;
      await a.execute(testContext(), { kind: 'update', item, object: { ...store.list<CSIStorageCapacity>(R)[0]!, capacity: '3Gi' }, changed: ['capacity'] }).catch(() => undefined);
      expect(reports).to.have.length(2);
      expect(reports[1]).to.contain('update in namespace');
    });

    it("within an item's pass, a write that goes through does not settle the item: a later write of the same pass may still be denied (one episode, not two)", async function () {
      const a = gated();
      deny = denied;
      await create(a, item);
      deny = (verb) => (verb === 'update' ? denied(verb) : undefined);
      const pass = ITEM_TARGET(itemKey(item));
      const duplicate = seeded(GiB);
      await a.execute(testContext(), { kind: 'delete', object: duplicate, why: 'duplicate' }, pass);
      expect([a.refusal === undefined, cleared], 'the delete went through, the pass is not over').to.deep.equal([false, 0]);
      await a.execute(testContext(), { kind: 'update', item, object: { ...duplicate, capacity: '2Gi' }, changed: ['capacity'] }, pass).catch(() => undefined);
      expect(reports, 'still the first episode').to.have.length(1);
    });

    it('a pass that owes nothing any more settles: the item passed without a write, the item no longer desired, the object no longer obsolete', async function () {
      const a = gated();
      deny = denied;
      await create(a, item);
      a.settled((t) => t === ITEM_TARGET(itemKey(item)));
      expect([a.refusal, cleared]).to.deep.equal([undefined, 1]);
      await create(a, item);
      const obsolete = seeded(GiB);
      await a.execute(testContext(), { kind: 'delete', object: obsolete, why: 'obsolete' }).catch(() => undefined);
      a.settleUnowed(new Map([[itemKey(item), {}]]), [obsolete]);
      expect(a.refusal, 'both still owed').to.not.equal(undefined);
      a.settleUnowed(new Map(), [obsolete]);
      expect(a.refusal, 'the delete still owed').to.contain('delete in namespace');
      a.settleUnowed(new Map(), []);
      expect([a.refusal, cleared]).to.deep.equal([undefined, 2]);
    });
  });
});
