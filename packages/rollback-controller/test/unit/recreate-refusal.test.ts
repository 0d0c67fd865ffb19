import { expect } from 'chai';
import { KubeApiError } from '@topovol/shared';
import type { KubeClient, KubeObject, PersistentVolumeClaim, ResourceType, WriteOptions } from '@topovol/shared';
import { failure } from '@topovol/testing';
import { recreateCheck } from '../../src/rollback/recreate-check.js';

/** Only the refusal, as most cases here ask. */
const recreateRefusal = async (client: KubeClient, claim: PersistentVolumeClaim): Promise<string | undefined> => (await recreateCheck(client, claim)).refused;

const refusal = (code: number, reason: string, message: string): KubeApiError => KubeApiError.fromResponse(code, JSON.stringify({ kind: 'Status', status: 'Failure', code, reason, message }));

// The check before a rollback deletes anything: would the API server take the claim's copy?
describe('recreateCheck: the dry run of a claim copy', function () {
  const claim: PersistentVolumeClaim = {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: {
      name: 'c1',
      namespace: 'ns',
      uid: 'uid-c1',
      resourceVersion: '7',
      labels: { app: 'db' },
      annotations: { 'volume.kubernetes.io/selected-node': 'a', 'example.com/keep': 'me' },
      ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'o', uid: 'uid-o', controller: true, blockOwnerDeletion: true }],
    },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, storageClassName: 'fast', volumeName: 'v1' },
  };
  const sent: { obj: KubeObject; opts?: WriteOptions }[] = [];
  const answering = (answer: () => Promise<unknown>): KubeClient =>
    ({
      create: (_r: ResourceType, obj: KubeObject, opts?: WriteOptions) => {
        sent.push({ obj, opts });
        return answer();
      },
    }) as unknown as KubeClient;
  beforeEach(() => (sent.length = 0));

  it("answers with the finalizers admission gives the copy (a driver's webhook adds its own): a re-created claim gets them back", async function () {
    const admitted = { metadata: { finalizers: ['kubernetes.io/pvc-protection', 'topolvm.io/pvc'] } };
    expect(await recreateCheck(answering(() => Promise.resolve(admitted)), claim)).to.deep.equal({ finalizers: ['kubernetes.io/pvc-protection', 'topolvm.io/pvc'] });
  });

  it('sends the copy the rollback would create, as a dry run under a generated name: taken, no refusal', async function () {
    expect(await recreateRefusal(answering(() => Promise.resolve({})), claim)).to.equal(undefined);
    expect(sent).to.have.length(1);
    expect(sent[0]!.opts?.dryRun).to.equal(true);
    const md = sent[0]!.obj.metadata!;
    expect([md.name, md.generateName, md.namespace, md.uid, md.resourceVersion]).to.deep.equal([undefined, 'c1-', 'ns', undefined, undefined]);
    expect(md.ownerReferences).to.deep.equal(claim.metadata!.ownerReferences);
    expect(md.annotations).to.deep.equal({ 'example.com/keep': 'me' });
    expect((sent[0]!.obj as PersistentVolumeClaim).spec?.volumeName).to.equal(undefined);
  });

  it("admission's refusal (the ownerReference plugin, a policy, a webhook, validation) is the reason the claim is kept", async function () {
    const plugin = 'persistentvolumeclaims "c1-x" is forbidden: cannot set blockOwnerDeletion if an ownerReference refers to a resource you can\'t set finalizers on: , <nil>';
    expect(await recreateRefusal(answering(() => Promise.reject(refusal(403, 'Forbidden', plugin))), claim)).to.equal(plugin);
    expect(await recreateRefusal(answering(() => Promise.reject(refusal(422, 'Invalid', 'denied by policy'))), claim)).to.equal('denied by policy');
    expect(await recreateRefusal(answering(() => Promise.reject(refusal(400, 'BadRequest', 'admission webhook "w" denied the request'))), claim)).to.equal('admission webhook "w" denied the request');
  });

  it('a full quota is not: the claim still there counts in it, and its delete frees what the copy needs', async function () {
    const quota = 'persistentvolumeclaims "c1-x" is forbidden: exceeded quota: q, requested: persistentvolumeclaims=1, used: persistentvolumeclaims=2, limited: persistentvolumeclaims=2';
    expect(await recreateRefusal(answering(() => Promise.reject(refusal(403, 'Forbidden', quota))), claim)).to.equal(undefined);
  });

  it("a webhook that does not support dry runs: the copy cannot be checked, said as such (not the claim's refusal)", async function () {
    const why = await recreateRefusal(answering(() => Promise.reject(refusal(400, 'BadRequest', 'admission webhook "w.example.com" does not support dry run'))), claim);
    expect(why).to.match(/^its re-create cannot be checked before the delete \(admission webhook "w.example.com" does not support dry run\); the webhook's configuration needs sideEffects None or NoneOnDryRun$/);
  });

  it('a quota already over its limit is a refusal: the re-create would be refused too', async function () {
    const over = 'persistentvolumeclaims "c1-x" is forbidden: exceeded quota: q, requested: requests.storage=1Gi, used: requests.storage=8Gi, limited: requests.storage=5Gi';
    expect(await recreateRefusal(answering(() => Promise.reject(refusal(403, 'Forbidden', over))), claim)).to.equal(over);
  });

  it('a name of 253 characters: the generated name is cut to the 58 characters kube-apiserver keeps of a prefix', async function () {
    const long = { ...claim, metadata: { ...claim.metadata, name: 'c'.repeat(253) } };
    await recreateRefusal(answering(() => Promise.resolve({})), long);
    expect(sent[0]!.obj.metadata?.generateName).to.equal('c'.repeat(58));
  });

  it('no answer, or a server error, says nothing about the copy: thrown, so the rollback is decided again later', async function () {
    const err = await failure(recreateRefusal(answering(() => Promise.reject(refusal(500, 'InternalError', 'etcd away'))), claim));
    expect(err).to.be.instanceOf(KubeApiError);
  });
});
