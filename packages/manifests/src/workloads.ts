import { commonLabels, INSTALL_NAMESPACE, MANAGER_IMAGE } from './manifest.js';
import type { Manifest } from './manifest.js';
import { LABEL_HOSTNAME, MANAGER_FLAGS, parseDuration } from '@topovol/shared';

export const METRICS_PORT = 8443;
export const HEALTH_PORT = 8081;
/** The socket a CSI driver container and the capacity loop share in the sidecar examples. */
export const CSI_SOCKET_DIR = '/csi';

type Json = Record<string, unknown>;

/**
 * The manager container's requests and limits (the Helm chart's default `resources`). The memory
 * limit is what a cluster of some 10,000 volumes, claims and pods needs twice over
 * (docs/benchmarks.md, "Memory with pods cached": 290 MiB at its peak, the start-up lists): a
 * limit below a cluster's peak is a crash loop, each start listing again. kube-controller-manager
 * sets none; docs/install.md says how to size it for larger clusters. The CPU request is a share
 * that keeps the Lease renewed on a busy node (kubeadm requests 200m for kube-controller-manager,
 * with no limit); 10m weighed almost nothing against the node's other pods.
 */
export const MANAGER_RESOURCES = { requests: { cpu: '100m', memory: '128Mi' }, limits: { cpu: '1', memory: '1Gi' } };

export interface ManagerWorkload {
  kind: 'Deployment' | 'DaemonSet';
  /** Object name, also the app.kubernetes.io/instance label. */
  name: string;
  component: string;
  serviceAccountName: string;
  /** --controllers value. */
  controllers: string;
  leaderElect: boolean;
  /** Further manager flags (after the common ones), as they appear in the container's args. */
  args?: string[];
  /** Deployments only. */
  replicas?: number;
  /** Containers next to the manager (a CSI driver), sharing the socket volume. */
  sidecars?: Json[];
  namespace?: string;
}

/**
 * The manager's args for a workload. --leader-elect-namespace is spelled out from the downward API
 * (the kubelet expands $(NAMESPACE)) rather than read from the mounted token's namespace file, so a
 * test can run the same args outside a pod and the Role's namespace is visible in the manifest.
 */
export function managerArgs(w: Pick<ManagerWorkload, 'controllers' | 'leaderElect' | 'args'>): string[] {
  return [
    `--controllers=${w.controllers}`,
    `--leader-elect=${String(w.leaderElect)}`,
    ...(w.leaderElect ? ['--leader-elect-namespace=$(NAMESPACE)'] : []),
    `--metrics-bind-address=:${METRICS_PORT}`,
    `--health-probe-bind-address=:${HEALTH_PORT}`,
    ...(w.args ?? []),
  ];
}

function fieldEnv(name: string, fieldPath: string): Json {
  return { name, valueFrom: { fieldRef: { fieldPath } } };
}

/** The restricted Pod Security Standard, per container (sidecars may be a driver's own image). */
export const RESTRICTED_CONTAINER_SECURITY: Json = {
  allowPrivilegeEscalation: false,
  capabilities: { drop: ['ALL'] },
  readOnlyRootFilesystem: true,
  runAsNonRoot: true,
  runAsUser: 65532,
  runAsGroup: 65532,
  seccompProfile: { type: 'RuntimeDefault' },
};

function managerContainer(w: ManagerWorkload): Json {
  const env = [fieldEnv('POD_NAME', 'metadata.name'), fieldEnv('NAMESPACE', 'metadata.namespace'), fieldEnv('NODE_NAME', 'spec.nodeName')];
  const mounts: Json[] = [{ name: 'tmp', mountPath: '/tmp' }];
  if (w.sidecars?.length) mounts.push({ name: 'socket-dir', mountPath: CSI_SOCKET_DIR });
  return {
    name: 'manager',
    image: MANAGER_IMAGE,
    imagePullPolicy: 'IfNotPresent',
    args: managerArgs(w),
    env,
    ports: [
      { name: 'metrics', containerPort: METRICS_PORT, protocol: 'TCP' },
      { name: 'health', containerPort: HEALTH_PORT, protocol: 'TCP' },
    ],
    // As kubeadm probes kube-controller-manager (cmd/kubeadm/app/util/staticpod/utils.go): the
    // probes are answered on the event loop that also parses list pages and collects garbage, so
    // a slow answer under CPU contention must not restart a pod that is merely busy.
    livenessProbe: { httpGet: { path: '/healthz', port: 'health' }, initialDelaySeconds: 10, timeoutSeconds: 15, periodSeconds: 10, failureThreshold: 8 },
    readinessProbe: { httpGet: { path: '/readyz', port: 'health' }, initialDelaySeconds: 5, timeoutSeconds: 5, periodSeconds: 10 },
    resources: MANAGER_RESOURCES,
    securityContext: RESTRICTED_CONTAINER_SECURITY,
    volumeMounts: mounts,
  };
}

/**
 * Longer than the manager's own deadline: on SIGTERM it waits --shutdown-timeout for reconciles,
 * then up to 5 s more for Events and the Lease release, then exits anyway. A SIGKILL before that
 * leaves the Lease held, and the standby waits out its duration. Only the args rendered here are
 * read: a --shutdown-timeout patched in later needs terminationGracePeriodSeconds patched with it.
 */
export function gracePeriodSeconds(args: readonly string[]): number {
  let value: string | undefined;
  for (let i = 0; i < args.length && args[i] !== '--'; i++) {
    const a = args[i]!;
    if (a.startsWith('--shutdown-timeout=')) value = a.slice('--shutdown-timeout='.length);
    else if (a === '--shutdown-timeout') value = args[++i];
  }
  const ms = value !== undefined ? parseDuration(value) : Number(MANAGER_FLAGS.find((f) => f.name === 'shutdown-timeout')!.default);
  return Math.ceil(ms / 1000) + 10;
}

/** The image is built for Linux only; on a cluster with Windows nodes a pod must not land there. */
export const LINUX_NODE_SELECTOR = { 'kubernetes.io/os': 'linux' };

/**
 * The per-node capacity DaemonSet runs wherever the CSI driver's node plugin runs, and node plugins
 * tolerate every taint (a control-plane node, nodes a cluster keeps for some workloads) so that
 * volumes there stay usable: without this the DaemonSet skips tainted nodes, and capacity on them
 * is never published.
 */
export const PER_NODE_TOLERATIONS = [{ operator: 'Exists' }];

/** A Deployment or DaemonSet running the manager image with the given loops. */
export function managerWorkload(w: ManagerWorkload): Manifest {
  const namespace = w.namespace ?? INSTALL_NAMESPACE;
  const selector = { 'app.kubernetes.io/name': 'topovol', 'app.kubernetes.io/instance': w.name };
  const labels = { ...commonLabels(w.component), 'app.kubernetes.io/instance': w.name };
  const volumes: Json[] = [{ name: 'tmp', emptyDir: {} }];
  if (w.sidecars?.length) volumes.push({ name: 'socket-dir', emptyDir: {} });
  const podSpec: Json = {
    serviceAccountName: w.serviceAccountName,
    securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
    terminationGracePeriodSeconds: gracePeriodSeconds(managerArgs(w)),
    nodeSelector: LINUX_NODE_SELECTOR,
    containers: [managerContainer(w), ...(w.sidecars ?? [])],
    volumes,
  };
  if (w.kind === 'DaemonSet') podSpec.tolerations = PER_NODE_TOLERATIONS;
  if (w.kind === 'Deployment') {
    // Spread the standby away from the leader's node where possible.
    podSpec.topologySpreadConstraints = [
      { maxSkew: 1, topologyKey: LABEL_HOSTNAME, whenUnsatisfiable: 'ScheduleAnyway', labelSelector: { matchLabels: selector } },
    ];
  }
  return {
    apiVersion: 'apps/v1',
    kind: w.kind,
    metadata: { name: w.name, namespace, labels },
    spec: {
      ...(w.kind === 'Deployment' ? { replicas: w.replicas ?? 2 } : {}),
      selector: { matchLabels: selector },
      template: { metadata: { labels }, spec: podSpec },
    },
  };
}

/**
 * A Deployment's PodDisruptionBudget: one replica at a time may be evicted (a drain, a cluster
 * autoscaler scale-down), so both are never gone at once and the standby can take the Lease. With
 * one replica a drain still proceeds. The pods' own topology spread is only a preference (a
 * one-node cluster must still run both), so a node can hold both replicas.
 */
export function disruptionBudget(workload: Manifest): Manifest {
  const { name, namespace, labels } = workload.metadata;
  const spec = workload.spec as { selector: Json };
  return {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: { name, namespace, labels },
    // Pods not ready (a loop waiting for its driver or its caches) may always be evicted: with the
    // default policy two unready replicas would block every drain of their nodes for ever.
    spec: { maxUnavailable: 1, unhealthyPodEvictionPolicy: 'AlwaysAllow', selector: spec.selector },
  };
}

/** The CSI driver image the capacity examples run until the user names the real one. */
export const CSI_DRIVER_PLACEHOLDER_IMAGE = 'registry.example.com/csi-driver:replace-me';

/**
 * A stand-in for the CSI driver container the capacity loop runs next to; replace it with the real
 * driver (and relax the pod's securityContext if the driver needs privileges, e.g. a node plugin).
 */
export function csiDriverPlaceholder(name: string, args: string[]): Json {
  return {
    name,
    image: CSI_DRIVER_PLACEHOLDER_IMAGE,
    args: [`--endpoint=unix://${CSI_SOCKET_DIR}/csi.sock`, ...args],
    securityContext: RESTRICTED_CONTAINER_SECURITY,
    volumeMounts: [{ name: 'socket-dir', mountPath: CSI_SOCKET_DIR }],
  };
}
