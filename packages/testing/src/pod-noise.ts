import fc from 'fast-check';
import type { Pod } from '@topovol/shared';

/**
 * What a pod's creator, the kubelet or another controller adds to a pod that the projection
 * (projectPod) drops or blanks: labels, annotations, finalizers, owners that are not the
 * controller, containers and their images, other volumes, affinity preferences and a priority,
 * conditions other than PodScheduled, IPs, start time and QoS class. Plus fields it keeps, varied
 * so that a projection that lost one would decide differently: the phase, init and ephemeral
 * container states, a container's last state, a deletion, a node selector and required node
 * affinity. For property tests: decisions on projectPod(p) must equal decisions on p.
 */
export const podNoiseArb = fc.record({
  labels: fc.option(fc.dictionary(fc.constantFrom('app', 'pod-template-hash', 'x'), fc.string({ maxLength: 8 })), { nil: undefined }),
  annotations: fc.option(fc.dictionary(fc.constantFrom('example.com/a', 'kubectl.kubernetes.io/restartedAt'), fc.string({ maxLength: 8 })), { nil: undefined }),
  finalizers: fc.boolean(),
  /** An owner that is not the controller (the projection keeps only the controller). */
  otherOwner: fc.boolean(),
  containers: fc.boolean(),
  otherVolumes: fc.boolean(),
  preferences: fc.boolean(),
  conditions: fc.constantFrom<'none' | 'notReady' | 'ready'>('none', 'notReady', 'ready'),
  kubeletStatus: fc.boolean(),
  /** Container statuses get their image, image ID and container ID (blanked in the projection). */
  images: fc.boolean(),
  initStatus: fc.constantFrom<'none' | 'waiting' | 'terminated'>('none', 'none', 'none', 'waiting', 'terminated'),
  /** A container that ran and is waiting to restart (its lastState terminated). */
  restarted: fc.constantFrom(false, false, false, true),
  /** The phase the kubelet reported, if not the fixture's. */
  phase: fc.constantFrom<'asIs' | 'Running' | 'Succeeded' | 'Failed'>('asIs', 'asIs', 'asIs', 'Running', 'Succeeded', 'Failed'),
  /** Being deleted; then perhaps with a debug container still running (which keeps it alive). */
  deleting: fc.constantFrom<'no' | 'yes' | 'debugRunning'>('no', 'no', 'no', 'no', 'no', 'yes', 'debugRunning'),
  /**
   * A node selector, or required node affinity matching the fixtures' nodes by name (n1, a) or
   * matching none (kept for pods with claims; the fixtures' nodes have no labels).
   */
  selectors: fc.constantFrom<'none' | 'nodeSelector' | 'affinityMatching' | 'affinityNotMatching'>('none', 'none', 'nodeSelector', 'affinityMatching', 'affinityNotMatching'),
});
export type PodNoise = typeof podNoiseArb extends fc.Arbitrary<infer T> ? T : never;

/** The pod with the noise added (a new object, with its apiVersion and kind, as the server serves it). */
export function withPodNoise(p: Pod, n: PodNoise): Pod {
  const out: Pod = { ...structuredClone(p), apiVersion: 'v1', kind: 'Pod' };
  const md = (out.metadata ??= {});
  const spec = (out.spec ??= { containers: [] });
  const status = (out.status ??= {});
  if (n.labels) md.labels = { ...md.labels, ...n.labels };
  if (n.annotations) md.annotations = { ...md.annotations, ...n.annotations };
  if (n.finalizers) md.finalizers = ['example.com/hold'];
  md.generateName = 'web-';
  md.managedFields = [{ manager: 'kubelet', operation: 'Update', apiVersion: 'v1', fieldsType: 'FieldsV1', fieldsV1: { 'f:status': {} }, subresource: 'status' }];
  if (n.otherOwner) md.ownerReferences = [...(md.ownerReferences ?? []), { apiVersion: 'v1', kind: 'ConfigMap', name: 'cm', uid: 'cm-uid' }];
  if (n.deleting !== 'no') Object.assign(md, { deletionTimestamp: '2026-11-29T10:00:00Z', deletionGracePeriodSeconds: 30 });
  if (n.containers) spec.containers = [{ name: 'app', image: 'registry.example/app:1', resources: { requests: { cpu: '1' } }, volumeMounts: [{ name: 'data', mountPath: '/data' }] }];
  if (n.otherVolumes) spec.volumes = [...(spec.volumes ?? []), { name: 'cfg', configMap: { name: 'cm' } }, { name: 'tmp', emptyDir: {} }];
  if (n.preferences) {
    spec.schedulerName = 'default-scheduler';
    spec.affinity = { ...spec.affinity, nodeAffinity: { ...spec.affinity?.nodeAffinity, preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 1, preference: { matchExpressions: [{ key: 'zone', operator: 'In', values: ['z1'] }] } }] } };
  }
  if (n.selectors === 'nodeSelector') spec.nodeSelector = { ...spec.nodeSelector, 'kubernetes.io/os': 'linux' };
  if (n.selectors === 'affinityMatching' || n.selectors === 'affinityNotMatching') {
    const term = n.selectors === 'affinityMatching' ? { matchFields: [{ key: 'metadata.name', operator: 'In', values: ['n1', 'a'] }] } : { matchExpressions: [{ key: 'zone', operator: 'In', values: ['z1', 'z2'] }] };
    spec.affinity = { ...spec.affinity, nodeAffinity: { ...spec.affinity?.nodeAffinity, requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [term] } } };
  }
  if (n.conditions !== 'none') {
    const v = n.conditions === 'ready' ? 'True' : 'False';
    status.conditions = [...(status.conditions ?? []), ...['Initialized', 'ContainersReady', 'Ready'].map((type) => ({ type, status: v, lastTransitionTime: '2026-11-29T09:00:00Z' }))];
  }
  if (n.kubeletStatus) Object.assign(status, { hostIP: '10.0.0.1', podIP: '10.1.0.1', startTime: '2026-11-29T09:00:00Z', qosClass: 'Burstable', message: 'm', reason: 'r' });
  if (n.phase !== 'asIs') status.phase = n.phase;
  // The kubelet restarts containers only in a pod that has not ended.
  if (n.restarted && status.phase !== 'Succeeded' && status.phase !== 'Failed') {
    const ran = { waiting: { reason: 'CrashLoopBackOff' } };
    const last = { terminated: { exitCode: 1, reason: 'Error' } };
    status.containerStatuses = (status.containerStatuses ?? [{ name: 'app', image: 'a', imageID: '', ready: false, restartCount: 0 }]).map((s) => ({ ...s, restartCount: 1, state: ran, lastState: last }));
  }
  if (n.images) status.containerStatuses = status.containerStatuses?.map((s) => ({ ...s, image: 'registry.example/app:1', imageID: 'sha256:abc', containerID: 'containerd://1' }));
  if (n.initStatus !== 'none') {
    const state = n.initStatus === 'waiting' ? { waiting: { reason: 'PodInitializing' } } : { terminated: { exitCode: 0, reason: 'Completed' } };
    status.initContainerStatuses = [{ name: 'init', image: 'i', imageID: '', ready: n.initStatus === 'terminated', restartCount: 0, state }];
  }
  if (n.deleting === 'debugRunning') status.ephemeralContainerStatuses = [{ name: 'debug', image: 'd', imageID: '', ready: false, restartCount: 0, state: { running: { startedAt: '2026-11-29T09:30:00Z' } } }];
  return out;
}
