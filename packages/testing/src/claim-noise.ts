import fc from 'fast-check';
import type { PersistentVolumeClaim } from '@topovol/shared';

/**
 * What a claim's creator (or another controller) may add to a claim that no loop decides on:
 * labels, other annotations, finalizers, owners, limits, repeated access modes, status
 * conditions and resize fields, and over-long values of the annotations the loops do read.
 * For property tests of the claim projection (projectClaim): decisions on the projection must
 * equal decisions on the whole claim.
 */
export const claimNoiseArb = fc.record({
  labels: fc.option(fc.dictionary(fc.constantFrom('app', 'tier', 'team', 'x'), fc.string({ maxLength: 8 })), { nil: undefined }),
  annotations: fc.option(fc.dictionary(fc.constantFrom('example.com/a', 'example.com/b', 'kubectl.kubernetes.io/last-applied-configuration'), fc.string({ maxLength: 8 })), { nil: undefined }),
  finalizers: fc.option(fc.constantFrom<string[]>(['kubernetes.io/pvc-protection'], ['example.com/hold', 'kubernetes.io/pvc-protection']), { nil: undefined }),
  owner: fc.boolean(),
  limits: fc.boolean(),
  repeatModes: fc.boolean(),
  conditions: fc.boolean(),
  /**
   * Fields the projection keeps, varied so that a projection that dropped one would decide
   * differently: status (Bound with modes, capacity and attributes class; Lost), volume mode,
   * deletion, the binding, class, provisioner and migration annotations, a data source.
   */
  status: fc.constantFrom<'asIs' | 'Bound' | 'Lost'>('asIs', 'asIs', 'Bound', 'Lost'),
  volumeMode: fc.constantFrom<string | undefined>(undefined, undefined, 'Block', 'Filesystem'),
  deleting: fc.boolean(),
  marks: fc.subarray(['pv.kubernetes.io/bound-by-controller', 'pv.kubernetes.io/bind-completed', 'volume.beta.kubernetes.io/storage-provisioner', 'volume.kubernetes.io/storage-provisioner', 'pv.kubernetes.io/migrated-to', 'volume.beta.kubernetes.io/storage-class']),
  /** The API server mirrors dataSource into dataSourceRef; a cross-namespace source has only the latter. */
  dataSource: fc.constantFrom<'none' | 'both' | 'refOnly'>('none', 'none', 'both', 'refOnly'),
  /** An annotation the loops read, given a value longer than any name (cut in the projection). */
  longValue: fc.constantFrom<string | undefined>(undefined, 'volume.kubernetes.io/selected-node', 'volume.kubernetes.io/storage-provisioner', 'pv.kubernetes.io/migrated-to', 'volume.beta.kubernetes.io/storage-class', 'pv.kubernetes.io/bind-completed'),
});
export type ClaimNoise = typeof claimNoiseArb extends fc.Arbitrary<infer T> ? T : never;

/** The claim with the noise added (a new object, with its apiVersion and kind). */
export function withNoise(c: PersistentVolumeClaim, n: ClaimNoise): PersistentVolumeClaim {
  // As the server serves it: with its kind (a list's items get theirs from the informer).
  const out: PersistentVolumeClaim = { ...structuredClone(c), apiVersion: 'v1', kind: 'PersistentVolumeClaim' };
  const md = (out.metadata ??= {});
  const spec = (out.spec ??= {});
  const MARK_VALUES: Record<string, string> = {
    'pv.kubernetes.io/migrated-to': 'ebs.csi.aws.com',
    'volume.beta.kubernetes.io/storage-class': 'fast',
    'volume.beta.kubernetes.io/storage-provisioner': 'kubernetes.io/aws-ebs',
    'volume.kubernetes.io/storage-provisioner': 'example.com/csi',
  };
  for (const m of n.marks) md.annotations = { ...md.annotations, [m]: MARK_VALUES[m] ?? 'yes' };
  if (n.status === 'Bound') out.status = { phase: 'Bound', accessModes: ['ReadWriteOnce'], capacity: { storage: '1Gi' }, currentVolumeAttributesClassName: 'gold' };
  if (n.status === 'Lost') out.status = { phase: 'Lost' };
  if (n.volumeMode) spec.volumeMode = n.volumeMode;
  if (n.deleting) Object.assign(md, { deletionTimestamp: '2026-11-29T10:00:00Z', deletionGracePeriodSeconds: 0 });
  const source = { apiGroup: 'snapshot.storage.k8s.io', kind: 'VolumeSnapshot', name: 'snap' };
  if (n.dataSource === 'both') spec.dataSource = { ...source };
  if (n.dataSource !== 'none') spec.dataSourceRef = { ...source, ...(n.dataSource === 'refOnly' ? { namespace: 'other' } : {}) };
  if (n.labels) md.labels = { ...md.labels, ...n.labels };
  if (n.annotations) md.annotations = { ...md.annotations, ...n.annotations };
  if (n.longValue) md.annotations = { ...md.annotations, [n.longValue]: `${md.annotations?.[n.longValue] ?? 'n1'}${'x'.repeat(2000)}` };
  if (n.finalizers) md.finalizers = n.finalizers;
  if (n.owner) md.ownerReferences = [{ apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'db', uid: 'sts-uid', controller: true }];
  if (n.limits) spec.resources = { ...spec.resources, limits: { storage: '100Gi' } };
  if (n.repeatModes && spec.accessModes) spec.accessModes = [...spec.accessModes, ...spec.accessModes];
  if (n.conditions) out.status = { ...out.status, conditions: [{ type: 'Resizing', status: 'True' }], allocatedResources: { storage: '9Gi' } };
  return out;
}

/**
 * Actions or decisions as JSON with every claim in them reduced to its identity, so that the
 * same plan about a whole claim and about its projection compare equal; with `cutValues`, a long
 * value withNoise made and projectClaim cut reads the same whole and cut.
 */
export function claimsByIdentity(x: unknown, opts: { cutValues?: boolean } = {}): unknown {
  return JSON.parse(
    JSON.stringify(x, (_k, v: unknown) => {
      const o = v as PersistentVolumeClaim | null;
      if (o && typeof o === 'object' && o.kind === 'PersistentVolumeClaim' && o.spec) return `claim ${o.metadata?.namespace}/${o.metadata?.name} ${o.metadata?.uid} ${o.metadata?.resourceVersion}`;
      // A value the projection cut (withNoise's long run of "x"), quoted in an Event or carried
      // into a plan (a selected node to check), reads the same either way.
      if (opts.cutValues && typeof v === 'string') return v.replace(/x{100,}…?/g, '(long)');
      return v;
    }),
  ) as unknown;
}
