import { dump } from 'js-yaml';
import type { ControllerDescriptor } from '@topovol/shared';
import { GENERATED_HEADER } from './install-files.js';
import { INSTALL_NAMESPACE, MANAGER_IMAGE_NAME, MANAGER_IMAGE_TAG } from './manifest.js';
import { CSI_DRIVER_PLACEHOLDER_IMAGE, CSI_SOCKET_DIR, gracePeriodSeconds, LINUX_NODE_SELECTOR, MANAGER_RESOURCES, METRICS_PORT, PER_NODE_TOLERATIONS } from './workloads.js';

export const CHART_NAME = 'topovol';
export const CSI_SOCKET_PATH = `${CSI_SOCKET_DIR}/csi.sock`;
/** Where the chart mounts metrics.certSecretName in the manager container (--metrics-cert-path). */
export const METRICS_CERT_DIR = '/etc/topovol/metrics-cert';

/** The values key of a loop: its --controllers name in camelCase (pv-binder → pvBinder). */
export function valuesKey(d: Pick<ControllerDescriptor, 'name'>): string {
  return d.name.replace(/-([a-z0-9])/g, (_m, c: string) => c.toUpperCase());
}

/** `.Values.controllers.<key>.enabled` */
export function enabledExpr(d: Pick<ControllerDescriptor, 'name'>): string {
  return `.Values.controllers.${valuesKey(d)}.enabled`;
}

export function chartYaml(appVersion: string): string {
  return `# ${GENERATED_HEADER}
apiVersion: v2
name: ${CHART_NAME}
description: Topovol storage controller-manager (claim binding, topology, CSI capacity, provisioning rollback)
type: application
version: ${appVersion}
appVersion: ${JSON.stringify(appVersion)}
keywords: [storage, csi, persistentvolume]
`;
}

function yamlBlock(value: unknown, indent: number): string {
  const pad = ' '.repeat(indent);
  return dump(value, { lineWidth: -1, quotingType: '"' })
    .trimEnd()
    .split('\n')
    .map((l) => pad + l)
    .join('\n');
}

/**
 * values.yaml: the defaults render what config/default installs (the loops --controllers=*
 * starts, each in its own Deployment); every other loop is opt-in, as the flag has it.
 */
export function valuesYaml(descriptors: readonly ControllerDescriptor[], capacityController: string): string {
  const loops = descriptors
    .filter((d) => d.name !== capacityController)
    .map((d) => `  # ${d.name}: ${d.description}.${d.disabledByDefault ? ' Opt-in, as with --controllers.' : ''}\n  ${valuesKey(d)}:\n    enabled: ${String(!d.disabledByDefault)}`)
    .join('\n');
  const capacity = descriptors.find((d) => d.name === capacityController);
  return `# ${GENERATED_HEADER}
# Defaults render the same objects as config/default (kubectl apply -k config/default).

# The install namespace, created by the chart with the restricted Pod Security Standard enforced.
# create: false when it exists already, e.g. when it is the release namespace made by
# helm install --namespace <name> --create-namespace (then label it as docs/install.md shows).
namespace:
  name: ${INSTALL_NAMESPACE}
  create: true

image:
  repository: ${MANAGER_IMAGE_NAME}
  tag: ${MANAGER_IMAGE_TAG}
  pullPolicy: IfNotPresent

# Replicas of every Deployment; one leads each loop's Lease, the others stand by.
replicas: 2

# Every enabled loop that needs no CSI driver in one Deployment (one ServiceAccount bound to the
# ClusterRole of each loop it runs, one Lease per loop) instead of a Deployment per loop.
allInOne: false

controllers:
${loops}
${capacity ? `  # ${capacity.name}: ${capacity.description}.
  # Runs next to a CSI driver: as a sidecar of its controller (a Deployment) or, with perNode, as a
  # DaemonSet next to its node plugin. Opt-in. Replace driver.image with the driver's own image.
  ${valuesKey(capacity)}:
    enabled: false
    perNode: false
    # --driver-name; empty means the name the driver reports in GetPluginInfo.
    driverName: ""
    # --csi-address: the driver's socket, in the ${CSI_SOCKET_DIR} volume both containers mount.
    csiAddress: ${CSI_SOCKET_PATH}
    driver:
      image: ${CSI_DRIVER_PLACEHOLDER_IMAGE}
      extraArgs: []
    # perNode only: where the DaemonSet runs. Match the driver's node plugin, which usually
    # tolerates every taint; a node without the instance has no capacity published.
    daemonSet:
      nodeSelector:
${yamlBlock(LINUX_NODE_SELECTOR, 8)}
      tolerations:
${yamlBlock(PER_NODE_TOLERATIONS, 8)}
` : ''}
# The manager container's resources (every workload).
resources:
${yamlBlock(MANAGER_RESOURCES, 2)}

# More manager flags for every workload (docs/reference/flags.md), e.g. --kube-api-qps=50.
# A --shutdown-timeout past 30s needs terminationGracePeriodSeconds raised with it (timeout + 10 s):
# a pod killed before the manager exits leaves its Lease held until it expires.
extraArgs: []
terminationGracePeriodSeconds: ${gracePeriodSeconds([])}

# Where the Deployments' pods run (the per-node DaemonSet: controllers.capacity.daemonSet).
# Helm merges maps: to drop the default selector, set kubernetes.io/os to null.
nodeSelector:
${yamlBlock(LINUX_NODE_SELECTOR, 2)}
tolerations: []
affinity: {}
# Every pod's priority class, e.g. system-cluster-critical where the cluster admits it in the
# install namespace (docs/install.md, "Memory and CPU").
priorityClassName: ""
podAnnotations: {}

# API Priority and Fairness (config/flowcontrol): the loops' requests at priority level
# workload-high and their Lease renewals at leader-election, as kube-controller-manager's are;
# without them, ServiceAccounts outside kube-system share workload-low with tenants' controllers.
# false keeps the API server's defaults (or your own FlowSchemas).
flowSchemas:
  create: true

metrics:
  # The manager's /metrics port (--metrics-bind-address, HTTPS), named "metrics" in every pod.
  port: ${METRICS_PORT}
  # A kubernetes.io/tls Secret in the install namespace (cert-manager's, say) to serve on the
  # metrics port instead of a self-signed certificate: mounted read-only at ${METRICS_CERT_DIR}
  # in every manager container and passed as --metrics-cert-path; a renewed pair is served within
  # 10 s, without a restart. Pods wait in ContainerCreating while the Secret does not exist.
  certSecretName: ""
  # A Service over every Topovol pod's metrics port and a Prometheus Operator ServiceMonitor
  # (config/prometheus); needs the operator's CRDs.
  serviceMonitor:
    enabled: false
    # The scrape's tlsConfig. Empty: insecureSkipVerify (the self-signed certificate). With
    # certSecretName, verify it instead, e.g. (cert-manager puts ca.crt in the Secret):
    #   tlsConfig:
    #     ca: {secret: {name: <certSecretName>, key: ca.crt}}
    #     serverName: topovol-metrics.<namespace.name>.svc
    tlsConfig: {}
  # The alerts of config/prometheus/prometheus-rule.yaml as a PrometheusRule.
  prometheusRule:
    enabled: false
`;
}

/**
 * _helpers.tpl: the all-in-one --controllers value, written as config/manager/all-in-one writes
 * it: `*` when every loop it starts is enabled, then the opt-in loops by name; else the names.
 */
export function helpersTpl(descriptors: readonly ControllerDescriptor[], capacityController: string): string {
  const standalone = descriptors.filter((d) => d.name !== capacityController);
  const defaults = standalone.filter((d) => !d.disabledByDefault);
  const optIn = standalone.filter((d) => d.disabledByDefault);
  const add = (d: ControllerDescriptor): string => `{{- if ${enabledExpr(d)} }}{{- $on = append $on ${JSON.stringify(d.name)} }}{{- end }}`;
  const star = defaults.length
    ? [`{{- if and ${defaults.map(enabledExpr).join(' ')} }}{{- $on = append $on "*" }}{{- else }}`, ...defaults.map(add), '{{- end }}']
    : [];
  return [
    `{{/* ${GENERATED_HEADER} */}}`,
    '{{/* The --controllers value of the all-in-one Deployment; empty when no loop it runs is enabled. */}}',
    '{{- define "topovol.allInOneControllers" -}}',
    '{{- $on := list }}',
    ...star,
    ...optIn.map(add),
    '{{- join "," $on -}}',
    '{{- end -}}',
    '',
  ].join('\n');
}
