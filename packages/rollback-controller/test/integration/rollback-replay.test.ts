import { expect } from 'chai';
import { Resources } from '@topovol/shared';
import type { KubeClient, KubeObject, Pod } from '@topovol/shared';
import { createTestNamespace, eventually, sharedControlPlane } from '@topovol/testing';
import { missedPodUse } from '../../src/rollback/rollback-server-reads.js';
import { bindPod, pod } from './rollback-harness.js';

/**
 * The last check before a rollback deletes a claim: the replay of the namespace's pod events since
 * the loop's pod watch, against the real API server. It may answer "no use" only for a replay that
 * reached the pods as listed when it started; anything else keeps the claim.
 */
describe('rollback replay: pod events the loop may have missed', function () {
  // Each replay waits at most its watch's timeout (5 s) plus a list; a hang fails here.
  this.timeout(60_000);
  let admin: KubeClient;
  let ns = '';

  before(async () => {
    admin = (await sharedControlPlane()).adminClient();
  });
  beforeEach(async () => {
    ns = await createTestNamespace(admin, 'rbr-');
  });
  afterEach(async () => {
    await admin.delete(Resources.namespaces, ns).catch(() => undefined);
  });

  /** Where a pod informer of the namespace would be now: the resourceVersion of a list of its pods. */
  const informerNow = async (): Promise<string> => {
    const rv = (await admin.list<Pod>(Resources.pods, { namespace: ns })).metadata?.resourceVersion;
    expect(rv, 'a list carries a resourceVersion').to.be.a('string').and.not.equal('');
    return rv!;
  };
  /** A write elsewhere in the namespace, so that the server's resourceVersion moves past `informerNow` with no pod event. */
  const otherWrite = async (): Promise<void> => {
    await admin.create<KubeObject>(Resources.configMaps, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { generateName: 'other-', namespace: ns } });
  };
  const deleteNow = (name: string): Promise<void> => admin.delete(Resources.pods, name, ns, { gracePeriodSeconds: 0 });

  it('finds a pod of the claim scheduled and deleted after the start', async function () {
    const start = await informerNow();
    await admin.create<Pod>(Resources.pods, pod(ns, 'user', ['data']));
    await bindPod(admin, ns, 'user', 'node-a');
    await deleteNow('user');
    const why = await missedPodUse(admin, ns, 'data', start);
    expect(why).to.be.a('string').and.include(`pod ${ns}/user using claim data was scheduled to node node-a`);
  });

  it('answers no use after only unrelated pod changes, once the replay reached the list (a bookmark)', async function () {
    const start = await informerNow();
    // Another claim's pod, scheduled; this claim's pod never scheduled; both deleted.
    await admin.create<Pod>(Resources.pods, pod(ns, 'other', ['other-claim']));
    await bindPod(admin, ns, 'other', 'node-a');
    await deleteNow('other');
    await admin.create<Pod>(Resources.pods, pod(ns, 'pending', ['data']));
    await admin.patch<Pod>(Resources.pods, 'pending', ns, 'merge', { metadata: { labels: { touched: 'yes' } } });
    await deleteNow('pending');
    await otherWrite();
    // Nothing happens in the namespace during the replay: only a bookmark can show it complete.
    expect(await missedPodUse(admin, ns, 'data', start)).to.equal(undefined);
  });

  it('answers no use when unrelated pod events arrive during the replay (an event reaches the list)', async function () {
    const start = await informerNow();
    await admin.create<Pod>(Resources.pods, pod(ns, 'busy', ['other-claim']));
    let writing = true;
    const writer = (async () => {
      for (let i = 0; writing; i++) {
        await admin.patch<Pod>(Resources.pods, 'busy', ns, 'merge', { metadata: { labels: { n: String(i) } } });
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    try {
      expect(await missedPodUse(admin, ns, 'data', start)).to.equal(undefined);
    } finally {
      writing = false;
      await writer;
    }
  });

  it('counts a start the server no longer has (410) as use', async function () {
    // A new kube-apiserver's watch cache starts at the current resourceVersion: '1' is then older
    // than anything it holds, however few writes this control plane has seen.
    await (await sharedControlPlane()).restartApiServer();
    await otherWrite().catch(() => undefined);
    // Until its pod cache is ready the server answers 429, which missedPodUse throws.
    const why = await eventually(() => missedPodUse(admin, ns, 'data', '1'), 60_000, 500);
    expect(why).to.equal('the pod watch is too far behind the server to tell whether a pod used it meanwhile');
  });

  it('answers no use when the loop has already seen everything listed', async function () {
    await otherWrite();
    // No event can come after the start, and the watch cache sends no bookmark at a watch's own
    // resourceVersion: the replay is complete before it starts.
    expect(await missedPodUse(admin, ns, 'data', await informerNow())).to.equal(undefined);
  });

  it('counts a replay that ended without reaching the list as use, not as "no use"', async function () {
    const start = await informerNow();
    await otherWrite();
    // timeoutSeconds 1: the server ends the watch before any bookmark, and no pod event comes,
    // as when a backlog of events outlasts the watch: nothing shows the replay complete.
    const why = await missedPodUse(admin, ns, 'data', start, { timeoutSeconds: 1 });
    expect(why).to.equal("the replay of the pod events since the loop's watch did not reach the pods listed now: cannot tell whether a pod used it meanwhile");
  });

  it('answers a pod of the claim found even when the replay did not reach the list', async function () {
    const start = await informerNow();
    await admin.create<Pod>(Resources.pods, { ...pod(ns, 'ran', ['data']), spec: { ...pod(ns, 'ran', ['data']).spec!, nodeName: 'node-b' } });
    await deleteNow('ran');
    await otherWrite();
    const why = await missedPodUse(admin, ns, 'data', start, { timeoutSeconds: 1 });
    expect(why).to.be.a('string').and.include(`pod ${ns}/ran using claim data was scheduled to node node-b`);
  });
});
