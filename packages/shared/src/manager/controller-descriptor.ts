import type { KubeClient } from '../client/kube-client.js';
import type { Controller } from '../controller/controller.js';
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
}

/**
 * How a loop plugs into the manager: its --controllers name, its own flags and RBAC needs, and a
 * setup that registers informers and handlers (run before leadership) and returns the controller
 * whose workers start once this process leads the loop's Lease.
 */
export interface ControllerDescriptor {
  name: string;
  description: string;
  disabledByDefault?: boolean;
  /** The component name in Events (source.component); defaults to topovol-<name>. */
  eventComponent?: string;
  flags?: FlagSpec[];
  rbac?: PolicyRule[];
  setup(env: ControllerEnv): Controller | Promise<Controller>;
}
