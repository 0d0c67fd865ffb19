import { expect } from 'chai';
import { KubeApiError, logger } from '@topovol/shared';
import type { KubeClient, KubeObject, ResourceType } from '@topovol/shared';
import { resolveOwner } from '../../src/objects/resolve-owner.js';

// Which objects resolveOwner reads and what it answers, over a map of objects (reads only).
function clientOf(objects: KubeObject[]): { client: KubeClient; reads: string[] } {
  const reads: string[] = [];
  const get = (r: ResourceType, name: string): Promise<KubeObject> => {
    reads.push(`${r.group || 'core'}/${r.plural}/${name}`);
    const o = objects.find((x) => x.kind === r.kind && (x.apiVersion ?? 'v1') === (r.group ? `${r.group}/${r.version}` : r.version) && x.metadata?.name === name);
    return o ? Promise.resolve(o) : Promise.reject(new Error(`${r.plural} ${name} not found`));
  };
  return { client: { get } as unknown as KubeClient, reads };
}

describe('resolveOwner (--capacity-ownerref-level)', function () {
  let saved: { pod?: string; ns?: string } = {};
  beforeEach(() => {
    saved = { pod: process.env.POD_NAME, ns: process.env.NAMESPACE };
    process.env.POD_NAME = 'cap-0';
    process.env.NAMESPACE = 'ns';
  });
  afterEach(() => {
    for (const [k, v] of [['POD_NAME', saved.pod], ['NAMESPACE', saved.ns]] as const) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });

  const pod = (owner: { apiVersion: string; kind: string }): KubeObject => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'cap-0', namespace: 'ns', ownerReferences: [{ ...owner, name: 'cap', uid: 'uid-owner', controller: true }] },
  });
  // Another workload's apps/v1 StatefulSet that happens to share the name.
  const unrelated: KubeObject = { apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name: 'cap', namespace: 'ns', uid: 'uid-unrelated' } };

  it('a controller of another group with an apps/v1 kind name (OpenKruise) is never taken for the apps/v1 object of that name', async function () {
    const { client, reads } = clientOf([pod({ apiVersion: 'apps.kruise.io/v1beta1', kind: 'StatefulSet' }), unrelated]);
    const err = await resolveOwner(client, 1, 'ns', logger()).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(err?.message).to.match(/its controller is apps\.kruise\.io\/v1beta1\/StatefulSet cap/);
    expect(reads).to.deep.equal(['core/pods/cap-0']);
  });

  it('objects in another namespace than the pod\'s ($NAMESPACE): refused before any read, as an owner there would count as none', async function () {
    // A pod of our pod's name in the objects' namespace (anyone who may create pods there) must not become their owner.
    const { client, reads } = clientOf([{ ...pod({ apiVersion: 'apps/v1', kind: 'StatefulSet' }), metadata: { name: 'cap-0', namespace: 'objects' } }]);
    process.env.NAMESPACE = 'ns';
    const err = await resolveOwner(client, 0, 'objects', logger()).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(err?.message).to.match(/go to namespace objects .* runs in ns/);
    expect(reads).to.deep.equal([]);
    // The same namespace: resolved; and -1 needs no namespace at all.
    process.env.NAMESPACE = 'objects';
    expect(await resolveOwner(client, 0, 'objects', logger())).to.include({ kind: 'Pod', name: 'cap-0' });
    process.env.NAMESPACE = 'ns';
    expect(await resolveOwner(client, -1, 'objects', logger())).to.equal(undefined);
    // Without $NAMESPACE, as external-provisioner: no start (the objects' namespace is no stand-in for the pod's).
    delete process.env.NAMESPACE;
    const none = await resolveOwner(client, 0, 'objects', logger()).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(none?.message).to.match(/needs \$NAMESPACE/);
    expect(reads).to.deep.equal(['core/pods/cap-0']);
  });

  it('an apps/v1 StatefulSet is resolved', async function () {
    const sts: KubeObject = { ...unrelated, metadata: { ...unrelated.metadata, uid: 'uid-owner' } };
    const { client } = clientOf([pod({ apiVersion: 'apps/v1', kind: 'StatefulSet' }), sts]);
    expect(await resolveOwner(client, 1, 'ns', logger())).to.deep.equal({ apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'cap', uid: 'uid-owner', controller: true });
  });

  it('transient errors (503, 429, a reset connection) are waited out, growing to 30 s apart; a refusal is not', async function () {
    // external-provisioner exits here on the first error; a manager that exits at every start
    // while the API server is briefly unavailable is a crash loop (docs/divergences.md).
    const transient = [
      KubeApiError.fromResponse(503, JSON.stringify({ kind: 'Status', code: 503, reason: 'ServiceUnavailable' })),
      KubeApiError.fromResponse(429, JSON.stringify({ kind: 'Status', code: 429, reason: 'TooManyRequests' }), '5'),
      Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }),
      ...Array.from({ length: 5 }, () => KubeApiError.fromResponse(500, '')),
    ];
    const sts: KubeObject = { ...unrelated, metadata: { ...unrelated.metadata, uid: 'uid-owner' } };
    const { client } = clientOf([pod({ apiVersion: 'apps/v1', kind: 'StatefulSet' }), sts]);
    const get = client.get.bind(client);
    const failing = [...transient];
    (client as { get: KubeClient['get'] }).get = (r, name, ns) => (failing.length ? Promise.reject(failing.shift()!) : get(r, name, ns));
    const waits: number[] = [];
    const owner = await resolveOwner(client, 1, 'ns', logger(), (ms) => (waits.push(ms), Promise.resolve()));
    expect(owner).to.include({ kind: 'StatefulSet', uid: 'uid-owner' });
    expect(waits).to.deep.equal([1_000, 5_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000]);

    for (const refusal of [KubeApiError.fromResponse(403, JSON.stringify({ kind: 'Status', code: 403, reason: 'Forbidden' })), KubeApiError.fromResponse(401, '')]) {
      const { client: refused } = clientOf([]);
      (refused as { get: KubeClient['get'] }).get = () => Promise.reject(refusal);
      const slept: number[] = [];
      const err = await resolveOwner(refused, 1, 'ns', logger(), (ms) => (slept.push(ms), Promise.resolve())).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).to.equal(refusal);
      expect(slept).to.deep.equal([]);
    }
  });
});
