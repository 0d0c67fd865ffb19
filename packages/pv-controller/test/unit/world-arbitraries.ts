import fc from 'fast-check';
import type { PersistentVolume } from '@topovol/shared';
import { claim, node, pod, sc, vol } from './world-fixture.js';
import type { WorldInput } from './world-fixture.js';

/** Random small clusters around one claim `c` (six volumes, two classes, one node), for property tests of the decisions. */
export const SEL = 'volume.kubernetes.io/selected-node';
export const sizes = ['500Mi', '1Gi', '2Gi', '5Gi'];
export const modes = [['ReadWriteOnce'], ['ReadWriteMany'], ['ReadWriteOnce', 'ReadWriteMany'], ['ReadOnlyMany']];

/** A volume's random features, before it is built (volumeArb); exported for tests that vary some of them. */
export const volumeRecordArb = fc.record({
  size: fc.constantFrom(...sizes),
  cls: fc.constantFrom('', 'fast', 'late'),
  accessModes: fc.constantFrom(...modes),
  ref: fc.constantFrom('none', 'c-by-name', 'c-uid', 'c-old-uid', 'other'),
  phase: fc.constantFrom('Available', 'Available', 'Bound', 'Released', 'Failed', 'Pending'),
  deleting: fc.boolean(),
  tier: fc.constantFrom(undefined, 'gold'),
  vac: fc.constantFrom(undefined, 'gold'),
  block: fc.boolean(),
});

export type VolumeRecord = typeof volumeRecordArb extends fc.Arbitrary<infer T> ? T : never;

export const volumeFromRecord = (i: number, r: VolumeRecord): PersistentVolume =>
  vol(`v${i}`, r.size, {
    storageClassName: r.cls,
    accessModes: r.accessModes,
    phase: r.phase,
    deleting: r.deleting,
    labels: r.tier ? { tier: r.tier } : undefined,
    volumeAttributesClassName: r.vac,
    volumeMode: r.block ? 'Block' : undefined,
    claimRef:
      r.ref === 'none'
        ? undefined
        : { namespace: 'ns', name: r.ref === 'other' ? 'other' : 'c', uid: r.ref === 'c-uid' ? 'uid-c' : r.ref === 'c-old-uid' ? 'old' : r.ref === 'other' ? 'uid-other' : undefined },
  });

const volumeArb = (i: number): fc.Arbitrary<PersistentVolume> => volumeRecordArb.map((r) => volumeFromRecord(i, r));

export const worldArb = fc.record({
  volumes: fc.tuple(...Array.from({ length: 6 }, (_, i) => volumeArb(i))),
  claim: fc.record({
    size: fc.constantFrom(...sizes),
    cls: fc.constantFrom<string | undefined>(undefined, '', 'fast', 'late', 'missing'),
    accessModes: fc.constantFrom(...modes),
    selector: fc.boolean(),
    vac: fc.constantFrom(undefined, 'gold'),
    selected: fc.constantFrom(undefined, 'n1', 'gone'),
    volumeName: fc.constantFrom(undefined, 'v0', 'v1'),
  }),
  podOn: fc.constantFrom<string | undefined | null>(null, undefined, 'n1'),
  noted: fc.constantFrom(undefined, 0, 999_000),
  activity: fc.constantFrom(undefined, 0, 990_000),
});

export type Arb = typeof worldArb extends fc.Arbitrary<infer T> ? T : never;

export function build(a: Arb): { c: ReturnType<typeof claim>; w: WorldInput } {
  const c = claim('c', a.claim.size, {
    storageClassName: a.claim.cls,
    accessModes: a.claim.accessModes,
    selector: a.claim.selector ? { matchLabels: { tier: 'gold' } } : undefined,
    volumeAttributesClassName: a.claim.vac,
    volumeName: a.claim.volumeName,
    annotations: a.claim.selected ? { [SEL]: a.claim.selected } : undefined,
  });
  const w: WorldInput = {
    volumes: [...a.volumes],
    claims: [c],
    classes: [sc('fast'), sc('late', { volumeBindingMode: 'WaitForFirstConsumer' })],
    nodes: [node('n1')],
    pods: a.podOn === null ? [] : [pod('p', 'c', a.podOn)],
    now: 1_000_000,
    graceMs: 60_000,
    noted: a.noted === undefined || !a.claim.selected ? undefined : { issue: 'noConsumer', node: a.claim.selected, since: a.noted },
    provisioningActivity: a.activity,
  };
  return { c, w };
}

