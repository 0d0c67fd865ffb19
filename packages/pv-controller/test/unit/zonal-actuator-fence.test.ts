import { expect } from 'chai';
import nock from 'nock';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EventRecorder, isFenced, isTerminalError, KubeClient, logger, metricsRegistry } from '@topovol/shared';
import type { EventType, KubeObject, PersistentVolume } from '@topovol/shared';
import { decideZonalUpgrade } from '../../src/zonal/decide-zonal-upgrade.js';
import { applyZonalDecision } from '../../src/zonal/zonal-actuator.js';

// Edges of the zonal upgrade's write that zonal-actuator.test.ts leaves open: a patch the
// leader-election fence holds back (LeaderElector.writeFence, through KubeClient.withWriteFence).
// Nothing is sent (nock refuses every connection), so no interceptor is needed.
const SERVER = 'https://kube.invalid';

function client(): KubeClient {
  const file = join(mkdtempSync(join(tmpdir(), 'zonal-edges-')), 'kubeconfig.json');
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
  return KubeClient.load(file, { qps: 0, burst: 1 });
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

async function failure(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected a failure');
}

describe('zonal actuator: a write held back by the leader-election fence', function () {
  const volume: PersistentVolume = {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name: 'v', resourceVersion: '41', labels: { 'topology.kubernetes.io/zone': 'z1' } },
    spec: { capacity: { storage: '1Gi' } },
  };

  before(() => nock.disableNetConnect());
  afterEach(() => nock.cleanAll());
  after(() => nock.enableNetConnect());

  it('is passed on to the controller for a retry (not dropped as done), neither counted as an error nor reported in an Event', async function () {
    const decision = decideZonalUpgrade(volume);
    expect(decision.kind).to.equal('upgrade');
    let asked = 0;
    const fenced = client().withWriteFence(() => {
      asked++;
      return 'lease ns/l released or lost: another replica may lead';
    });
    const events = new CapturedEvents(fenced);
    const counts = { error: await count('error'), upgraded: await count('upgraded') };

    const err = await failure(applyZonalDecision({ client: fenced, events, log: logger(), dryRun: false }, volume, decision));

    expect(asked, 'the patch asked the fence').to.equal(1);
    // Swallowed, the key would be done and the volume left without its affinity until its next update.
    expect(isFenced(err), String(err)).to.equal(true);
    expect(isTerminalError(err)).to.equal(false);
    // A pause of the leader, not a failed conversion: the retry decides again and is counted then.
    expect(await count('error')).to.equal(counts.error);
    expect(await count('upgraded')).to.equal(counts.upgraded);
    expect(events.captured).to.deep.equal([]);
  });
});
