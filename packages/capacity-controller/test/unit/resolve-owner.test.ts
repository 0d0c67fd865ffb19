import { expect } from 'chai';
import { logger } from '@topovol/shared';
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
  let saved: string | undefined;
  beforeEach(() => {
    saved = process.env.POD_NAME;
    process.env.POD_NAME = 'cap-0';
  });
  afterEach(() => {
    if (saved === undefined) delete process.env.POD_NAME;
    else process.env.POD_NAME = saved;
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

  it('an apps/v1 StatefulSet is resolved', async function () {
    const sts: KubeObject = { ...unrelated, metadata: { ...unrelated.metadata, uid: 'uid-owner' } };
    const { client } = clientOf([pod({ apiVersion: 'apps/v1', kind: 'StatefulSet' }), sts]);
    expect(await resolveOwner(client, 1, 'ns', logger())).to.deep.equal({ apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'cap', uid: 'uid-owner', controller: true });
  });
});
