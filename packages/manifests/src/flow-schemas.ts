import type { ControllerDescriptor } from '@topovol/shared';
import { commonLabels, INSTALL_NAMESPACE } from './manifest.js';
import type { Manifest } from './manifest.js';
import { ALL_IN_ONE_NAME, controllerObjectName, leaderElectionRules } from './rbac-objects.js';

const FLOWCONTROL = 'flowcontrol.apiserver.k8s.io/v1';

/**
 * API Priority and Fairness (KEP-1040) for the manager's ServiceAccounts. Without these, a
 * ServiceAccount outside kube-system falls under the API server's `service-accounts` FlowSchema
 * (priority level `workload-low`, shared with every tenant's controllers), while the requests of
 * kube-controller-manager, whose binder pv-binder stands in for, have `kube-controller-manager`
 * (`workload-high`) and their Lease renewals `system-leader-election` (`leader-election`); see the
 * suggested configuration in staging/src/k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap/default.go.
 * docs/adr/0017 says why every loop gets them.
 */
export const FLOW_SCHEMA_NAME = 'topovol';
export const LEADER_ELECTION_FLOW_SCHEMA_NAME = 'topovol-leader-election';

/**
 * Upstream's are 100 (system-leader-election) and 800 (kube-controller-manager); these sit just
 * after each, and before `service-accounts` (9000). Lease renewals must match before the schema
 * that takes every other request of the same users.
 */
export const LEADER_ELECTION_MATCHING_PRECEDENCE = 150;
export const FLOW_SCHEMA_MATCHING_PRECEDENCE = 850;

/**
 * Every ServiceAccount a config/ variant or the chart runs a loop as: one per loop, and the
 * all-in-one one. Named one by one rather than `*` in the namespace, so nothing else someone puts
 * in the install namespace is raised with them.
 */
export function managerServiceAccounts(descriptors: readonly ControllerDescriptor[]): string[] {
  return [...descriptors.map(controllerObjectName), ALL_IN_ONE_NAME].sort();
}

function leaseVerbs(): string[] {
  return [...new Set(leaderElectionRules([]).flatMap((r) => r.verbs))].sort();
}

interface FlowSchemaShape {
  name: string;
  matchingPrecedence: number;
  priorityLevel: string;
  rule: Record<string, unknown>;
}

function flowSchema(f: FlowSchemaShape, subjects: readonly object[]): Manifest {
  return {
    apiVersion: FLOWCONTROL,
    kind: 'FlowSchema',
    metadata: { name: f.name, labels: commonLabels('flowcontrol') },
    spec: {
      matchingPrecedence: f.matchingPrecedence,
      priorityLevelConfiguration: { name: f.priorityLevel },
      // One flow per ServiceAccount (kube-controller-manager's is ByNamespace): fair queuing keeps one
      // loop, or a stolen token of one, from taking the others' share of the level, whatever
      // namespaces its requests name (they are classified before they are authorized).
      distinguisherMethod: { type: 'ByUser' },
      rules: [{ subjects, ...f.rule }],
    },
  };
}

/** The two FlowSchemas: Lease renewals at `leader-election`, everything else at `workload-high`. */
export function flowSchemas(descriptors: readonly ControllerDescriptor[], namespace = INSTALL_NAMESPACE): Manifest[] {
  const subjects = managerServiceAccounts(descriptors).map((name) => ({ kind: 'ServiceAccount', serviceAccount: { name, namespace } }));
  return [
    flowSchema(
      {
        name: LEADER_ELECTION_FLOW_SCHEMA_NAME,
        matchingPrecedence: LEADER_ELECTION_MATCHING_PRECEDENCE,
        priorityLevel: 'leader-election',
        // The verbs the manager's Lease rules grant (what leader-elector.ts uses), in the namespace of its Leases.
        rule: { resourceRules: [{ apiGroups: ['coordination.k8s.io'], resources: ['leases'], namespaces: [namespace], verbs: leaseVerbs() }] },
      },
      subjects,
    ),
    flowSchema(
      {
        name: FLOW_SCHEMA_NAME,
        matchingPrecedence: FLOW_SCHEMA_MATCHING_PRECEDENCE,
        priorityLevel: 'workload-high',
        rule: {
          resourceRules: [{ apiGroups: ['*'], resources: ['*'], clusterScope: true, namespaces: ['*'], verbs: ['*'] }],
          nonResourceRules: [{ nonResourceURLs: ['*'], verbs: ['*'] }],
        },
      },
      subjects,
    ),
  ];
}
