import { load, loadAll } from 'js-yaml';
import type { ControllerDescriptor } from '@topovol/shared';
import { flowSchemas } from './flow-schemas.js';
import { HelmTemplateText, mapStrings } from './helm-template-text.js';
import { chartYaml, CHART_NAME, CSI_SOCKET_PATH, enabledExpr, helpersTpl, METRICS_CERT_DIR, valuesKey, valuesYaml } from './helm-values.js';
import { GENERATED_HEADER, namespaceObject } from './install-files.js';
import { INSTALL_NAMESPACE, MANAGER_IMAGE } from './manifest.js';
import type { Manifest } from './manifest.js';
import { ALL_IN_ONE_NAME, allInOneIdentity, clusterRoles, controllerIdentity, controllerObjectName, metricsReaderRole } from './rbac-objects.js';
import { csiDriverPlaceholder, disruptionBudget, managerWorkload, METRICS_PORT } from './workloads.js';
import type { ManagerWorkload } from './workloads.js';

export interface HelmChartInput {
  descriptors: readonly ControllerDescriptor[];
  capacityController: string;
  /** Chart version and appVersion. */
  appVersion: string;
  /**
   * The hand-written config/ files the chart carries, by path relative to the repository root:
   * config/crd/* (copied to crds/), config/admission/* and config/prometheus/* (templated).
   */
  configFiles: Readonly<Record<string, string>>;
}

type Json = Record<string, unknown>;

/** The template text builder, and the ServiceAccounts the all-in-one one replaces when allInOne is set. */
class Templating extends HelmTemplateText {
  constructor(readonly allInOneMembers: ReadonlySet<string>) {
    super();
  }
}
const DIR = `charts/${CHART_NAME}`;

function container(m: Manifest, name: string): Json {
  const spec = (m.spec as { template: { spec: { containers: Json[] } } }).template.spec;
  const c = spec.containers.find((x) => x.name === name);
  if (!c) throw new Error(`${m.metadata.name}: no container ${name}`);
  return c;
}

/** The objects of one template file, shown only when cond holds (always when cond is undefined). */
function templateFile(t: Templating, objects: readonly object[], cond?: string, comment?: string): string {
  const head = [`{{/* ${GENERATED_HEADER} */}}`, ...(comment ? [`{{/* ${comment} */}}`] : [])].join('\n');
  const body = t.yaml(objects.map((o) => withValues(t, o)));
  return cond ? `${head}\n{{- if ${cond} }}\n${body}\n{{- end }}\n` : `${head}\n${body}\n`;
}

/**
 * The values every object shares: the namespace (also inside ServiceAccount user names, which
 * name the all-in-one ServiceAccount instead of a loop's when allInOne is set) and the image.
 */
function withValues(t: Templating, o: object): object {
  const saUser = new RegExp(`^(.*)system:serviceaccount:${INSTALL_NAMESPACE}:([a-z0-9-]+)(.*)$`, 's');
  return mapStrings(o, (s) => {
    if (s === INSTALL_NAMESPACE) return t.value('.Values.namespace.name | quote');
    if (s === MANAGER_IMAGE) return `${t.value('.Values.image.repository')}:${t.value('.Values.image.tag')}`;
    const m = saUser.exec(s);
    if (m) {
      const sa = t.allInOneMembers.has(m[2]!) ? t.value(`ternary ${JSON.stringify(ALL_IN_ONE_NAME)} ${JSON.stringify(m[2])} .Values.allInOne`) : m[2]!;
      return `${m[1]!}system:serviceaccount:${t.value('.Values.namespace.name')}:${sa}${m[3]!}`;
    }
    return s;
  });
}

/** metrics.certSecretName; `default dict` for values of an older release (helm upgrade --reuse-values) without `metrics`. */
const METRICS_CERT_SECRET = '(.Values.metrics | default dict).certSecretName';

/**
 * A config/manager workload with values for the image, replicas, resources, metrics port, extra
 * manager flags and where its pods may run. The per-node DaemonSet takes its node selector and
 * tolerations from the capacity loop's values (it runs where the driver's node plugin runs).
 */
function chartWorkload(t: HelmTemplateText, w: ManagerWorkload, daemonSetValues?: string): Manifest {
  const m = managerWorkload(w);
  const c = container(m, 'manager');
  c.imagePullPolicy = t.value('.Values.image.pullPolicy | quote');
  c.resources = t.block('.Values.resources');
  c.args = (c.args as string[]).map((a) => (a === `--metrics-bind-address=:${METRICS_PORT}` ? `--metrics-bind-address=:${t.value('.Values.metrics.port')}` : a));
  // Before extraArgs, so that a --metrics-cert-path there (the flag's last value counts) wins.
  (c.args as string[]).push(t.lines(`{{- if ${METRICS_CERT_SECRET} }}\n- ${JSON.stringify(`--metrics-cert-path=${METRICS_CERT_DIR}`)}\n{{- end }}`));
  (c.args as string[]).push(t.lines('{{- range .Values.extraArgs }}\n- {{ . | quote }}\n{{- end }}'));
  (c.volumeMounts as unknown[]).push(t.lines(`{{- if ${METRICS_CERT_SECRET} }}\n- name: metrics-cert\n  mountPath: ${METRICS_CERT_DIR}\n  readOnly: true\n{{- end }}`));
  for (const p of c.ports as Json[]) if (p.name === 'metrics') p.containerPort = t.scalar('.Values.metrics.port');
  if (w.kind === 'Deployment') (m.spec as Json).replicas = t.scalar('.Values.replicas');
  const template = (m.spec as { template: { metadata: Json; spec: Json } }).template;
  template.metadata.annotations = t.optionalBlock('.Values.podAnnotations', 'stringMap');
  const pod = template.spec;
  (pod.volumes as unknown[]).push(t.lines(`{{- with ${METRICS_CERT_SECRET} }}\n- name: metrics-cert\n  secret:\n    secretName: {{ . | quote }}\n{{- end }}`));
  // Defaults in the template too: `helm upgrade --reuse-values` keeps an older release's values,
  // which may lack these keys (a grace period of nothing is the kubelet's 30 s).
  pod.terminationGracePeriodSeconds = t.scalar(`.Values.terminationGracePeriodSeconds | default ${String(pod.terminationGracePeriodSeconds)}`);
  pod.priorityClassName = t.optionalBlock('.Values.priorityClassName', 'string');
  if (w.kind === 'DaemonSet') {
    if (!daemonSetValues) throw new Error(`${w.name}: a DaemonSet needs its values key`);
    pod.nodeSelector = t.optionalBlock(`(${daemonSetValues} | default dict).nodeSelector`);
    pod.tolerations = t.optionalBlock(`(${daemonSetValues} | default dict).tolerations`);
  } else {
    pod.nodeSelector = t.optionalBlock('.Values.nodeSelector');
    pod.tolerations = t.optionalBlock('.Values.tolerations');
    pod.affinity = t.optionalBlock('.Values.affinity');
  }
  return m;
}

/** The capacity loop next to a CSI driver container, as config/manager's two examples have it. */
function capacityWorkloads(t: HelmTemplateText, capacity: ControllerDescriptor): Manifest[] {
  const v = `.Values.controllers.${valuesKey(capacity)}`;
  const csi = t.value(`${v}.csiAddress`);
  const driverName = t.lines(`{{- with ${v}.driverName }}\n- {{ printf "--driver-name=%s" . | quote }}\n{{- end }}`);
  const extraArgs = t.lines(`{{- range ${v}.driver.extraArgs }}\n- {{ . | quote }}\n{{- end }}`);
  const driver = (name: string, args: string[]): Json => {
    const c = csiDriverPlaceholder(name, args);
    c.image = t.value(`${v}.driver.image | quote`);
    c.args = [...(c.args as string[]).map((a) => a.replace(CSI_SOCKET_PATH, csi)), extraArgs];
    return c;
  };
  const name = controllerObjectName(capacity);
  // The same workloads as config/manager/<capacity>-sidecar and -per-node (see install-files.ts).
  return [
    chartWorkload(t, {
      kind: 'DaemonSet',
      name: `${name}-node`,
      component: capacity.name,
      serviceAccountName: name,
      controllers: capacity.name,
      leaderElect: false,
      args: [`--csi-address=${csi}`, '--capacity-node-name=$(NODE_NAME)', '--capacity-ownerref-level=0', driverName],
      sidecars: [driver('csi-node-driver', ['--mode=node', '--node-id=$(NODE_NAME)'])],
    }, `${v}.daemonSet`),
    chartWorkload(t, {
      kind: 'Deployment',
      name,
      component: capacity.name,
      serviceAccountName: name,
      controllers: capacity.name,
      leaderElect: true,
      args: [`--csi-address=${csi}`, '--capacity-ownerref-level=2', driverName],
      sidecars: [driver('csi-driver', ['--mode=controller'])],
    }),
  ];
}

/** A flat map of scalars as a Helm `dict` expression. */
function helmDict(o: Json): string {
  return `(dict ${Object.entries(o).map(([k, v]) => `${JSON.stringify(k)} ${JSON.stringify(v)}`).join(' ')})`;
}

function configObjects(input: HelmChartInput, rel: string): Json[] {
  const text = input.configFiles[rel];
  if (text === undefined) throw new Error(`the chart needs ${rel}`);
  return loadAll(text).filter((d): d is Json => typeof d === 'object' && d !== null);
}

function kustomizationResources(input: HelmChartInput, dir: string): string[] {
  const k = load(input.configFiles[`${dir}/kustomization.yaml`] ?? '') as { resources?: string[] } | undefined;
  if (!k?.resources) throw new Error(`the chart needs ${dir}/kustomization.yaml`);
  return k.resources.map((r) => `${dir}/${r}`);
}

/**
 * charts/topovol: the same objects as config/ (the renderers of config/rbac and config/manager,
 * and the hand-written config/crd, config/admission and config/prometheus), with values for what
 * users choose. With default values `helm template` renders what config/default does.
 */
export function renderHelmChart(input: HelmChartInput): Record<string, string> {
  const { descriptors, capacityController } = input;
  const capacity = descriptors.find((d) => d.name === capacityController);
  if (!capacity) throw new Error(`no descriptor named ${capacityController}`);
  const standalone = descriptors.filter((d) => d !== capacity);
  const files: Record<string, string> = {};
  const t = new Templating(new Set(standalone.map(controllerObjectName)));

  files[`${DIR}/Chart.yaml`] = chartYaml(input.appVersion);
  files[`${DIR}/values.yaml`] = valuesYaml(descriptors, capacityController);
  files[`${DIR}/templates/_helpers.tpl`] = helpersTpl(descriptors, capacityController);
  for (const rel of kustomizationResources(input, 'config/crd')) {
    // crds/ is installed as is (never templated), before the templates.
    files[`${DIR}/crds/${rel.slice('config/crd/'.length)}`] = `# ${GENERATED_HEADER}\n# Copied from ${rel}.\n${input.configFiles[rel] ?? ''}`;
  }
  files[`${DIR}/templates/namespace.yaml`] = templateFile(t, [namespaceObject()], '.Values.namespace.create');

  // RBAC as config/rbac has it: every loop's ClusterRole; each loop's identity, or the all-in-one one.
  files[`${DIR}/templates/rbac/cluster-roles.yaml`] = templateFile(t, [...descriptors.flatMap(clusterRoles), metricsReaderRole()]);
  for (const d of descriptors) {
    // The capacity loop keeps its own ServiceAccount next to the all-in-one Deployment.
    const cond = d === capacity ? `or (not .Values.allInOne) ${enabledExpr(d)}` : 'not .Values.allInOne';
    files[`${DIR}/templates/rbac/${d.name}.yaml`] = templateFile(t, controllerIdentity(d), cond);
  }
  // Not capacity's roles: it keeps its own ServiceAccount next to the driver, and the all-in-one process never runs it.
  files[`${DIR}/templates/rbac/all-in-one.yaml`] = templateFile(t, allInOneIdentity(standalone), '.Values.allInOne');
  // Every ServiceAccount either way (allInOne or not): a subject that does not exist matches nothing.
  // Shown unless turned off: values of an older release (helm upgrade --reuse-values) lack the key.
  files[`${DIR}/templates/flowcontrol/flow-schemas.yaml`] = templateFile(t, flowSchemas(descriptors), 'ne false (.Values.flowSchemas | default dict).create');

  for (const d of standalone) {
    const name = controllerObjectName(d);
    const w = chartWorkload(t, { kind: 'Deployment', name, component: d.name, serviceAccountName: name, controllers: d.name, leaderElect: true });
    files[`${DIR}/templates/manager/${d.name}.yaml`] = templateFile(t, [w, disruptionBudget(w)], `and (not .Values.allInOne) ${enabledExpr(d)}`, `${d.name}: ${d.description}.`);
  }
  const allInOne = chartWorkload(t, {
    kind: 'Deployment',
    name: ALL_IN_ONE_NAME,
    component: 'controller-manager',
    serviceAccountName: ALL_IN_ONE_NAME,
    controllers: t.value('include "topovol.allInOneControllers" .'),
    leaderElect: true,
  });
  files[`${DIR}/templates/manager/all-in-one.yaml`] = templateFile(t, [allInOne, disruptionBudget(allInOne)], 'and .Values.allInOne (include "topovol.allInOneControllers" .)');
  const [perNode, sidecar] = capacityWorkloads(t, capacity);
  const capValues = `.Values.controllers.${valuesKey(capacity)}`;
  files[`${DIR}/templates/manager/${capacity.name}.yaml`] =
    `{{/* ${GENERATED_HEADER} */}}\n{{- if ${capValues}.enabled }}\n{{- if ${capValues}.perNode }}\n` +
    `${t.yaml([withValues(t, perNode!)])}\n{{- else }}\n${t.yaml([withValues(t, sidecar!), withValues(t, disruptionBudget(sidecar!))])}\n{{- end }}\n{{- end }}\n`;

  for (const rel of kustomizationResources(input, 'config/admission')) {
    files[`${DIR}/templates/admission/${rel.slice('config/admission/'.length)}`] = templateFile(t, configObjects(input, rel));
  }

  // config/prometheus: the Service and ServiceMonitor go together; the rules apart.
  for (const rel of kustomizationResources(input, 'config/prometheus')) {
    const objects = configObjects(input, rel);
    for (const o of objects) {
      if (o.kind === 'Service') for (const p of (o.spec as { ports: Json[] }).ports) if (p.port === METRICS_PORT) p.port = t.scalar('.Values.metrics.port');
      // Empty (or an older release's values without the key): config/prometheus's own, insecureSkipVerify.
      if (o.kind === 'ServiceMonitor') {
        for (const e of (o.spec as { endpoints: Json[] }).endpoints) {
          e.tlsConfig = t.block(`((.Values.metrics.serviceMonitor | default dict).tlsConfig | default ${helmDict(e.tlsConfig as Json)})`);
        }
      }
    }
    const rule = objects.some((o) => o.kind === 'PrometheusRule');
    const cond = rule ? '.Values.metrics.prometheusRule.enabled' : '.Values.metrics.serviceMonitor.enabled';
    files[`${DIR}/templates/prometheus/${rel.slice('config/prometheus/'.length)}`] = templateFile(t, objects, cond);
  }
  return files;
}
