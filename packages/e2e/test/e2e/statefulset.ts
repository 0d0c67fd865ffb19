import type { KubeObject, Pod, ResourceType } from '@topovol/shared';
import { podAffinity } from '@topovol/testing';

export const STATEFUL_SETS: ResourceType = { group: 'apps', version: 'v1', plural: 'statefulsets', kind: 'StatefulSet', namespaced: true };

export interface StatefulSet extends KubeObject {
  spec: {
    replicas: number;
    serviceName: string;
    selector: { matchLabels: Record<string, string> };
    template: { metadata: { labels: Record<string, string> }; spec: NonNullable<Pod['spec']> };
    volumeClaimTemplates: KubeObject[];
  };
}

/**
 * The KEP-490 test plan's StatefulSet: `replicas` pods that must not share a node (required pod
 * anti-affinity per hostname), each with its own claim `data-<name>-<ordinal>` of the class from
 * the claim template. Default pod management (OrderedReady): replica n+1 is created once replica n
 * runs and is Ready, which the test reports in place of the kubelet.
 */
export function spreadStatefulSet(ns: string, name: string, replicas: number, cls: string, size = '1Gi'): StatefulSet {
  const labels = { app: name };
  return {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: { name, namespace: ns },
    spec: {
      replicas,
      serviceName: name,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          affinity: podAffinity('podAntiAffinity', labels),
          terminationGracePeriodSeconds: 0,
          containers: [{ name: 'app', image: 'registry.k8s.io/pause:3.10', volumeMounts: [{ name: 'data', mountPath: '/data' }] }],
        },
      },
      volumeClaimTemplates: [
        { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'data' }, spec: { accessModes: ['ReadWriteOnce'], storageClassName: cls, resources: { requests: { storage: size } } } } as KubeObject,
      ],
    },
  };
}
