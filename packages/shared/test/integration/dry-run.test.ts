import { expect } from 'chai';
import { createTestNamespace, sharedControlPlane } from '@topovol/testing';
import type { KubeClient } from '../../src/client/kube-client.js';
import { Resources } from '../../src/informer/resources.js';
import type { KubeObject } from '../../src/informer/object-key.js';

/**
 * Every dry-run write of the client, against a real kube-apiserver: answered as the write would be,
 * nothing stored. A unit test with a fake server can only check where the client puts `dryRun`;
 * whether the API server honours it there is this suite's question (a delete's `?dryRun=All` beside
 * a body of DeleteOptions is ignored, and the object deleted).
 */
describe('KubeClient dry runs against a real kube-apiserver: nothing stored', function () {
  let admin: KubeClient;
  let ns: string;
  before(async () => {
    admin = (await sharedControlPlane()).adminClient();
  });
  beforeEach(async () => {
    ns = await createTestNamespace(admin, 'dry-');
  });

  const configMap = (name: string): KubeObject => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns }, data: { a: '1' } }) as KubeObject;
  /** The stored object, or undefined. */
  const stored = (name: string): Promise<KubeObject | undefined> => admin.get<KubeObject>(Resources.configMaps, name, ns).catch(() => undefined);

  it('a delete, with preconditions, a grace period and a finalizer to wait for: the object stays as it was', async function () {
    // A finalizer makes a real delete visible (a deletionTimestamp), not only a missing object.
    const made = await admin.create<KubeObject>(Resources.configMaps, { ...configMap('held'), metadata: { name: 'held', namespace: ns, finalizers: ['test.topovol.io/hold'] } });
    const plain = await admin.create<KubeObject>(Resources.configMaps, configMap('plain'));
    await admin.delete(Resources.configMaps, 'held', ns, { dryRun: true, preconditions: { uid: made.metadata!.uid!, resourceVersion: made.metadata!.resourceVersion! }, gracePeriodSeconds: 0 });
    await admin.delete(Resources.configMaps, 'plain', ns, { dryRun: true, propagationPolicy: 'Background' });
    const [held, kept] = [await stored('held'), await stored('plain')];
    expect([held?.metadata?.resourceVersion, held?.metadata?.deletionTimestamp]).to.deep.equal([made.metadata?.resourceVersion, undefined]);
    expect(kept?.metadata?.resourceVersion).to.equal(plain.metadata?.resourceVersion);
    // The same call without dryRun deletes: the check above is not vacuous.
    await admin.delete(Resources.configMaps, 'plain', ns);
    expect(await stored('plain')).to.equal(undefined);
    await admin.patch(Resources.configMaps, 'held', ns, 'merge', { metadata: { finalizers: null } });
  });

  it('a create, a replace and a patch: answered with the object, nothing stored', async function () {
    const answered = await admin.create<KubeObject>(Resources.configMaps, configMap('new'), { dryRun: true });
    expect(answered.metadata?.name).to.equal('new');
    expect(await stored('new')).to.equal(undefined);
    const made = await admin.create<KubeObject>(Resources.configMaps, configMap('old'));
    await admin.replace<KubeObject>(Resources.configMaps, { ...made, data: { a: '2' } } as KubeObject, { dryRun: true });
    await admin.patch(Resources.configMaps, 'old', ns, 'merge', { data: { a: '3' } }, { dryRun: true });
    const now = await stored('old');
    expect([now?.metadata?.resourceVersion, (now as { data?: Record<string, string> } | undefined)?.data]).to.deep.equal([made.metadata?.resourceVersion, { a: '1' }]);
  });
});
