import type { KubeClient } from '../client/kube-client.js';
import type { Runnable } from '../controller/runnable.js';
import type { EventRecorder } from '../events/event-recorder.js';
import type { InformerSource } from '../informer/informer-scope.js';
import type { Logger } from '../logging/logger.js';
import type { FlagSpec } from './flag-parser.js';
import type { ManagerOptions } from './flags.js';

/** An RBAC rule a controller needs; config/rbac is generated from these. */
export interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
}

export interface ControllerEnv {
  client: KubeClient;
  /** Shared informers; the manager gives each loop a scope that records which ones it uses. */
  informers: InformerSource;
  /** Events are reported as this controller's component name. */
  events: EventRecorder;
  options: ManagerOptions;
  log: Logger;
  /**
   * What a setup that takes long is waiting for (e.g. its CSI driver, and why not yet): the loop's
   * readiness check says `setting up: <detail>` until the setup returns.
   */
  setupProgress: (detail: string) => void;
}

/**
 * What a loop's setup returns: its Controller, or its runnables in start order (a Controller plus
 * work of its own). The manager starts them once the loop's caches have synced (and this process
 * leads its Lease, for those that need it) and stops them in reverse order.
 */
export type LoopRunnables = Runnable | readonly Runnable[];

/**
 * How a loop plugs into the manager: its --controllers name, its own flags and RBAC needs, and a
 * setup that registers informers and handlers (run before leadership) and returns what to run.
 */
export interface ControllerDescriptor {
  name: string;
  description: string;
  disabledByDefault?: boolean;
  /** The component name in Events (source.component); defaults to topovol-<name>. */
  eventComponent?: string;
  /**
   * Whether its Events name the replica (source.host and reportingInstance: the pod's hostname);
   * default true. false: component only, as kube-controller-manager's controllers record them.
   */
  eventInstance?: boolean;
  flags?: FlagSpec[];
  /** Rules it needs cluster-wide: its ClusterRole, bound by a ClusterRoleBinding. */
  rbac?: PolicyRule[];
  /**
   * Rules it needs only in the namespace it runs in (objects of its own there, its own pod and
   * owners): a ClusterRole `topovol-<name>-namespaced` bound by a RoleBinding in the install
   * namespace only, as kube's `edit` is bound per namespace. external-provisioner grants its
   * CSIStorageCapacity writes and owner reads the same way, in a Role of its namespace
   * (deploy/kubernetes/rbac.yaml).
   */
  namespacedRbac?: PolicyRule[];
  setup(env: ControllerEnv): LoopRunnables | Promise<LoopRunnables>;
}

/**
 * What a loop's Events say they are from: its component, and the replica's host (source.host,
 * reportingInstance) unless its descriptor says eventInstance: false.
 */
export function eventSourceOf(d: ControllerDescriptor, host: string): { component: string; host: string } {
  return { component: d.eventComponent ?? `topovol-${d.name}`, host: d.eventInstance === false ? '' : host };
}

/** The runnables of a setup's result, in start order. */
export function runnablesOf(r: LoopRunnables): Runnable[] {
  return Array.isArray(r) ? [...(r as readonly Runnable[])] : [r as Runnable];
}
