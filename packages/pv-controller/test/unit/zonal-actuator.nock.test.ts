import { expect } from 'chai';
import nock from 'nock';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EventRecorder, isConflict, isFenced, isTerminalError, KubeClient, logger, metricsRegistry } from '@topovol/shared';
import type { EventType, KubeObject, PersistentVolume } from '@topovol/shared';
import { decideZonalUpgrade } from '../../src/zonal/decide-zonal-upgrade.js';
import { applyZonalDecision, REASON_CONVERTED, REASON_MALFORMED, REASON_NOT_KEPT, REASON_REFUSED } from '../../src/zonal/zonal-actuator.js';
import { failure } from '@topovol/testing';

// nock stands in for the API server only for answers the real one rarely gives on demand (422 for
// an affinity our decision thought valid, 500); the normal path and real Conflicts are covered by
// test/integration/zonal-pv-upgrade.test.ts.
const SERVER = 'https://kube.invalid';
const PATH = '/api/v1/persistentvolumes/v';

function client(): KubeClient {
  const file = join(mkdtempSync(join(tmpdir(), 'zonal-actuator-')), 'kubeconfig.json');
  writeFileSync(
    file,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster: { server: SERVER } }],
      users: [{ name: 'u', user: { token: 't' } }],
      contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
      'current-context': 'x',
    }),
  );
  // nodeHttp: nock intercepts Node's http module, not the direct transport's sockets.
  return KubeClient.load(file, { qps: 0, burst: 1, nodeHttp: true });
}

/** Keeps Events in memory instead of writing them. */
class CapturedEvents extends EventRecorder {
  readonly captured: { type: EventType; reason: string; message: string }[] = [];
  constructor(c: KubeClient) {
    super(c, 'topovol-zonal-pv-upgrade', 'test', true);
  }
  override event(_obj: KubeObject, type: EventType, reason: string, message: string): boolean {
    this.captured.push({ type, reason, message });
    return true;
  }
}

async function count(result: string): Promise<number> {
  const m = metricsRegistry.getSingleMetric('topovol_zonal_pv_upgrades_total');
  const values = m ? (await m.get()).values : [];
  return values.filter((v) => v.labels.result === result).reduce((s, v) => s + v.value, 0);
}

const status = (code: number, reason: string): Record<string, unknown> => ({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason, message: `${reason} happened` });

describe('zonal actuator: write outcomes', function () {
  const volume: PersistentVolume = {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name: 'v', resourceVersion: '41', labels: { 'topology.kubernetes.io/zone': 'z1' } },
    spec: { capacity: { storage: '1Gi' } },
  };
  const decision = decideZonalUpgrade(volume);
  let c: KubeClient;
  let events: CapturedEvents;
  const deps = (dryRun = false) => ({ client: c, events, log: logger(), dryRun });

  before(() => nock.disableNetConnect());
  beforeEach(() => {
    c = client();
    events = new CapturedEvents(c);
  });
  afterEach(() => nock.cleanAll());
  after(() => nock.enableNetConnect());

  it('sends a merge patch of nodeAffinity only, conditional on the resourceVersion it decided on', async function () {
    const before = await count('upgraded');
    const scope = nock(SERVER, { reqheaders: { 'content-type': 'application/merge-patch+json' } })
      .patch(PATH, (b: { metadata?: Record<string, unknown>; spec?: Record<string, unknown> }) => {
        return JSON.stringify(b.metadata) === JSON.stringify({ resourceVersion: '41' }) && Object.keys(b.spec ?? {}).join() === 'nodeAffinity';
      })
      .reply(200, { ...volume, metadata: { ...volume.metadata, resourceVersion: '42' }, spec: { ...volume.spec, nodeAffinity: decision.kind === 'upgrade' ? decision.nodeAffinity : undefined } });
    await applyZonalDecision(deps(), volume, decision);
    expect(scope.isDone()).to.equal(true);
    expect(await count('upgraded')).to.equal(before + 1);
    expect(events.captured).to.deep.equal([{ type: 'Normal', reason: REASON_CONVERTED, message: 'set spec.nodeAffinity from zone/region labels: topology.kubernetes.io/zone in (z1); nodes without zone/region labels too (2 terms)' }]);
  });

  it('accepted, but stored without the affinity (a mutating webhook dropped it): a Warning, not counted as converted', async function () {
    const upgraded = await count('upgraded');
    const errors = await count('error');
    nock(SERVER).patch(PATH).reply(200, { ...volume, metadata: { ...volume.metadata, resourceVersion: '42' } });
    await applyZonalDecision(deps(), volume, decision);
    expect(await count('upgraded')).to.equal(upgraded);
    expect(await count('error')).to.equal(errors + 1);
    expect(events.captured.map((e) => `${e.type} ${e.reason}`)).to.deep.equal([`Warning ${REASON_NOT_KEPT}`]);
  });

  it('accepted, but stored with another affinity (a mutating webhook changed it): a Warning, not counted as converted', async function () {
    const upgraded = await count('upgraded');
    const other = { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'topology.kubernetes.io/zone', operator: 'In', values: ['z9'] }] }] } };
    nock(SERVER).patch(PATH).reply(200, { ...volume, metadata: { ...volume.metadata, resourceVersion: '42' }, spec: { ...volume.spec, nodeAffinity: other } });
    await applyZonalDecision(deps(), volume, decision);
    expect(await count('upgraded')).to.equal(upgraded);
    expect(events.captured.map((e) => `${e.type} ${e.reason}`)).to.deep.equal([`Warning ${REASON_NOT_KEPT}`]);
  });

  it('stored as sent, keys in another order and empty lists left out (as the API server answers): converted', async function () {
    const upgraded = await count('upgraded');
    const sent = decision.kind === 'upgrade' ? decision.nodeAffinity : undefined;
    const reordered = JSON.parse(JSON.stringify(sent, (_k, v: unknown) => (v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).reverse()) : v))) as unknown;
    nock(SERVER).patch(PATH).reply(200, { ...volume, metadata: { ...volume.metadata, resourceVersion: '42' }, spec: { ...volume.spec, nodeAffinity: reordered } });
    await applyZonalDecision(deps(), volume, decision);
    expect(await count('upgraded')).to.equal(upgraded + 1);
    expect(events.captured.map((e) => `${e.type} ${e.reason}`)).to.deep.equal([`Normal ${REASON_CONVERTED}`]);
  });

  it('Conflict: rethrown for a retry, not counted as an error, no Event', async function () {
    const before = await count('error');
    nock(SERVER).patch(PATH).reply(409, status(409, 'Conflict'));
    const err = await failure(applyZonalDecision(deps(), volume, decision));
    expect(isConflict(err)).to.equal(true);
    expect(isTerminalError(err)).to.equal(false);
    expect(await count('error')).to.equal(before);
    expect(events.captured).to.deep.equal([]);
  });

  it('held back by the leader-election fence: rethrown for a retry (not dropped as done), not counted as an error, no Event', async function () {
    let asked = 0;
    const fenced = c.withWriteFence(() => {
      asked++;
      return 'lease ns/l released or lost: another replica may lead';
    });
    const counts = { error: await count('error'), upgraded: await count('upgraded') };
    const err = await failure(applyZonalDecision({ ...deps(), client: fenced }, volume, decision));
    expect(asked, 'the patch asked the fence').to.equal(1);
    // Swallowed, the key would be done and the volume left without its affinity until its next update.
    expect(isFenced(err), String(err)).to.equal(true);
    expect(isTerminalError(err)).to.equal(false);
    // A pause of the leader, not a failed conversion: the retry decides again and is counted then.
    expect(await count('error')).to.equal(counts.error);
    expect(await count('upgraded')).to.equal(counts.upgraded);
    expect(events.captured).to.deep.equal([]);
  });

  it('NotFound naming the volume: it went away, nothing to do', async function () {
    const before = await count('error');
    nock(SERVER).patch(PATH).reply(404, { ...status(404, 'NotFound'), details: { name: 'v', kind: 'persistentvolumes' } });
    await applyZonalDecision(deps(), volume, decision);
    expect(await count('error')).to.equal(before);
    expect(events.captured).to.deep.equal([]);
  });

  for (const [what, reply] of [
    ["a proxy's plain 404", () => nock(SERVER).patch(PATH).reply(404, '404 page not found', { 'content-type': 'text/plain' })],
    ['a NotFound naming no object', () => nock(SERVER).patch(PATH).reply(404, status(404, 'NotFound'))],
    ['a NotFound naming another object', () => nock(SERVER).patch(PATH).reply(404, { ...status(404, 'NotFound'), details: { name: 'other', kind: 'persistentvolumes' } })],
  ] as const) {
    it(`${what}: not taken for the volume gone (the loop has no re-sync to try again): counted as an error and rethrown for a retry`, async function () {
      const before = await count('error');
      reply();
      const err = await failure(applyZonalDecision(deps(), volume, decision));
      expect(isTerminalError(err)).to.equal(false);
      expect(await count('error')).to.equal(before + 1);
    });
  }

  it('Invalid, naming the affinity\'s fields: counted as an error, a Warning Event, and not retried (terminal)', async function () {
    const before = await count('error');
    const invalid = { ...status(422, 'Invalid'), details: { name: 'v', kind: 'persistentvolumes', causes: [{ reason: 'FieldValueInvalid', message: 'Invalid value', field: 'spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values[0]' }] } };
    nock(SERVER).patch(PATH).reply(422, invalid);
    const err = await failure(applyZonalDecision(deps(), volume, decision));
    expect(isTerminalError(err)).to.equal(true);
    expect(await count('error')).to.equal(before + 1);
    expect(events.captured.map((e) => `${e.type} ${e.reason}`)).to.deep.equal([`Warning ${REASON_MALFORMED}`]);
  });

  // Fixed by an edit no zone label change comes with (so no event brings the volume back), or a
  // webhook's own Invalid with field causes (kept as the webhook sent it), which may change.
  for (const [what, fields] of [
    ['another field (a legacy volume today\'s rules refuse, re-validated on every update)', ['metadata.labels']],
    ['a webhook\'s own cause naming spec.capacity', ['spec.capacity']],
    ['the affinity and another field', ['spec.nodeAffinity.required', 'spec.capacity']],
    ['a field that only starts like the affinity', ['spec.nodeAffinityX']],
  ] as const) {
    it(`Invalid, naming ${what}: a Warning that names the refusal, and retried with backoff (not terminal)`, async function () {
      const invalid = { ...status(422, 'Invalid'), details: { name: 'v', kind: 'persistentvolumes', causes: fields.map((field) => ({ reason: 'FieldValueInvalid', message: 'Invalid value', field })) } };
      nock(SERVER).patch(PATH).reply(422, invalid);
      const err = await failure(applyZonalDecision(deps(), volume, decision));
      expect(isTerminalError(err)).to.equal(false);
      expect(events.captured.map((e) => `${e.type} ${e.reason}`)).to.deep.equal([`Warning ${REASON_REFUSED}`]);
    });
  }

  it('Invalid, naming spec.nodeAffinity itself: terminal', async function () {
    const invalid = { ...status(422, 'Invalid'), details: { name: 'v', kind: 'persistentvolumes', causes: [{ reason: 'FieldValueForbidden', message: 'may not be changed', field: 'spec.nodeAffinity' }] } };
    nock(SERVER).patch(PATH).reply(422, invalid);
    const err = await failure(applyZonalDecision(deps(), volume, decision));
    expect(isTerminalError(err)).to.equal(true);
    expect(events.captured.map((e) => `${e.type} ${e.reason}`)).to.deep.equal([`Warning ${REASON_MALFORMED}`]);
  });

  // kube-apiserver's answer when a ValidatingAdmissionPolicy denies the write (reason defaulting to
  // Invalid, one cause with the message only: validating/dispatcher.go in k8s.io/apiserver).
  for (const [what, code, reason] of [
    ['a ValidatingAdmissionPolicy denial (422 naming no field)', 422, 'Invalid'],
    ['a webhook denial (400 unless it says otherwise)', 400, 'BadRequest'],
    ['a denial answered 403', 403, 'Forbidden'],
  ] as const) {
    it(`${what}: counted as an error, a Warning that names the refusal, and retried (the policy may change)`, async function () {
      const before = await count('error');
      const denied = { ...status(code, reason), message: "ValidatingAdmissionPolicy 'no-affinity' with binding 'b' denied request: not now", details: { name: 'v', kind: 'persistentvolumes', causes: [{ message: 'denied request: not now' }] } };
      nock(SERVER).patch(PATH).reply(code, denied);
      const err = await failure(applyZonalDecision(deps(), volume, decision));
      expect(isTerminalError(err)).to.equal(false);
      expect(await count('error')).to.equal(before + 1);
      expect(events.captured.map((e) => `${e.type} ${e.reason}`)).to.deep.equal([`Warning ${REASON_REFUSED}`]);
      expect(events.captured[0]!.message).to.match(/retrying: ValidatingAdmissionPolicy 'no-affinity'/);
    });
  }

  it('a server error: counted as an error and rethrown for a retry with backoff', async function () {
    const before = await count('error');
    nock(SERVER).patch(PATH).reply(500, status(500, 'InternalError'));
    const err = await failure(applyZonalDecision(deps(), volume, decision));
    expect(isTerminalError(err)).to.equal(false);
    expect(await count('error')).to.equal(before + 1);
    expect(events.captured).to.deep.equal([]);
  });

  it('dry run: no request at all, the dry_run count and a Normal Event', async function () {
    const before = await count('dry_run');
    await applyZonalDecision(deps(true), volume, decision); // disableNetConnect fails any request
    expect(await count('dry_run')).to.equal(before + 1);
    expect(events.captured.map((e) => `${e.type} ${e.reason}`)).to.deep.equal([`Normal ${REASON_CONVERTED}`]);
    expect(events.captured[0]!.message).to.match(/^dry run: would set/);
  });
});
