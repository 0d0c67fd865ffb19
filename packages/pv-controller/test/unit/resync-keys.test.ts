import { expect } from 'chai';
import fc from 'fast-check';
import { ANN_BIND_COMPLETED, FirstSeen, logger, Resources } from '@topovol/shared';
import type { KubeClient, PersistentVolume, PersistentVolumeClaim } from '@topovol/shared';
import { FakeEvents, FakeWrites } from '@topovol/testing';
import { BinderActuator } from '../../src/binder/actuator.js';
import { AssumeCache } from '../../src/binder/assume-cache.js';
import { binderKeyString } from '../../src/binder/binder-key.js';
import type { BinderKey } from '../../src/binder/binder-key.js';
import type { BinderWorld } from '../../src/binder/binder-world.js';
import { BinderReconciler } from '../../src/binder/reconcile-binder.js';
import { keysNeedingSync } from '../../src/binder/resync-keys.js';
import type { SelectedNodeIssueSeen } from '../../src/binder/selected-node-checks.js';
import { build, worldArb } from './world-arbitraries.js';
import { claim, vol, world } from './world-fixture.js';
import type { WorldInput } from './world-fixture.js';

// The binder's periodic re-sync queues only the keys whose decision plans something. What makes
// that safe: the reconcile of every key it leaves out would have written, recorded, remembered and
// re-queued nothing (checked below over random clusters, through the real glue and actuator).

const bound = { [ANN_BIND_COMPLETED]: 'yes' };
const ref = { namespace: 'ns', name: 'c', uid: 'uid-c' };
const none = (): boolean => false;
/** Claim c bound to volume v, its status as the binder writes it. */
const boundClaim = (): PersistentVolumeClaim => ({
  ...claim('c', '1Gi', { volumeName: 'v', annotations: bound }),
  status: { phase: 'Bound', accessModes: ['ReadWriteOnce'], capacity: { storage: '1Gi' } },
});

function keys(w: WorldInput, queued: (k: BinderKey) => boolean = none): string[] {
  return [...keysNeedingSync(w.claims ?? [], w.volumes ?? [], world(w), queued)].map(binderKeyString);
}

describe('binder re-sync: keysNeedingSync', function () {
  const cases: { name: string; w: WorldInput; want: string[]; queued?: string[] }[] = [
    {
      name: 'a bound pair in order: nothing',
      w: { claims: [boundClaim()], volumes: [vol('v', '1Gi', { claimRef: ref, phase: 'Bound' })] },
      want: [],
    },
    {
      name: "a bound claim whose volume's phase lags: both (each decision writes Bound)",
      w: { claims: [boundClaim()], volumes: [vol('v', '1Gi', { claimRef: ref, phase: 'Available' })] },
      want: ['pvc/ns/c', 'pv/v'],
    },
    {
      name: 'a pending claim and a free volume that fits: both',
      w: { claims: [claim('c', '1Gi')], volumes: [vol('v', '1Gi', { phase: 'Pending' })] },
      want: ['pvc/ns/c', 'pv/v'],
    },
    {
      name: 'a volume whose claim is gone: the volume (Released, then its reclaim policy)',
      w: { claims: [], volumes: [vol('v', '1Gi', { claimRef: ref, phase: 'Bound' })] },
      want: ['pv/v'],
    },
    {
      name: 'a claim already Lost whose volume is gone: nothing (the Warning is not repeated)',
      w: { claims: [claim('c', '1Gi', { volumeName: 'v', phase: 'Lost', annotations: bound })], volumes: [] },
      want: [],
    },
    {
      name: 'keys already queued are left to the reconcile that is coming',
      w: { claims: [claim('c', '1Gi')], volumes: [vol('v', '1Gi', { phase: 'Pending' })] },
      queued: ['pvc/ns/c', 'pv/v'],
      want: [],
    },
  ];
  for (const c of cases) {
    it(c.name, function () {
      expect(keys(c.w, (k) => (c.queued ?? []).includes(binderKeyString(k)))).to.deep.equal(c.want);
    });
  }

  it('a decision that throws queues its key (its reconcile reports the error) and the walk goes on', function () {
    // After the throwing claim, a volume whose claim is gone: still found by the same walk.
    const w: WorldInput = { claims: [claim('c', '1Gi', { storageClassName: 'boom' })], volumes: [vol('w', '1Gi', { claimRef: { namespace: 'ns', name: 'gone', uid: 'uid-gone' }, phase: 'Bound' })] };
    const base = world(w);
    const throwing: BinderWorld = {
      ...base,
      storageClass: (n) => {
        if (n === 'boom') throw new Error('an object no decision foresaw');
        return base.storageClass(n);
      },
    };
    const got = [...keysNeedingSync(w.claims ?? [], w.volumes ?? [], throwing, none)].map(binderKeyString);
    expect(got).to.deep.equal(['pvc/ns/c', 'pv/w']);
  });

  it('over random clusters, every key left out reconciles to nothing: no write, Event, note or re-queue', async function () {
    this.timeout(20_000);
    await fc.assert(
      fc.asyncProperty(worldArb, async (a) => {
        const { w } = build(a);
        const picked = new Set(keys(w));
        const store = new FakeWrites();
        for (const v of w.volumes ?? []) store.seed<PersistentVolume>(Resources.persistentVolumes, v);
        for (const c of w.claims ?? []) store.seed<PersistentVolumeClaim>(Resources.persistentVolumeClaims, c);
        const before = store.snapshot();
        const events = new FakeEvents();
        const issues = new FirstSeen<SelectedNodeIssueSeen>();
        const volumes = new AssumeCache<PersistentVolume>();
        const claims = new AssumeCache<PersistentVolumeClaim>();
        // A key with no plan must not read the server either.
        const client = new Proxy({} as KubeClient, {
          get: (_t, p) => () => Promise.reject(new Error(`unexpected read ${String(p)}`)),
        });
        const actuator = new BinderActuator({ client: store, events, volumes, claims, log: logger(), dryRun: false });
        const r = new BinderReconciler({ world: world(w), client, actuator, volumes, claims, inFlight: new Set(), requeueClaims: () => undefined, selectedNodeIssues: issues, dryRun: false });
        for (const c of w.claims ?? []) {
          const k = `pvc/ns/${c.metadata!.name!}`;
          if (picked.has(k)) continue;
          expect(await r.claim('ns', c.metadata!.name!), `${k}: re-queue`).to.equal(undefined);
        }
        for (const v of w.volumes ?? []) {
          const k = `pv/${v.metadata!.name!}`;
          if (picked.has(k)) continue;
          expect(await r.volume(v.metadata!.name!, { log: logger() }), `${k}: re-queue`).to.equal(undefined);
        }
        expect(store.snapshot(), 'writes').to.deep.equal(before);
        expect(events.recorded, 'Events').to.deep.equal([]);
        expect(issues.get('uid-c'), 'selected-node notes').to.equal(undefined);
      }),
      { numRuns: 500, seed: 4242 },
    );
  });
});
