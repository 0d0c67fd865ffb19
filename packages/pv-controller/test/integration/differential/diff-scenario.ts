import { Resources, retryOnConflict } from '@topovol/shared';
import type { KubeClient, Node, PersistentVolume, PersistentVolumeClaim, Pod, StorageClass } from '@topovol/shared';
import { createReadyNode, deleteNow, eventually } from '@topovol/testing';
import type { DiffCluster, SideName } from './diff-cluster.js';
import { QUIET_MS } from './diff-cluster.js';
import { CLAIM_LABEL, CLAIM_NOTE, scenarioState } from './diff-state.js';
import type { ScenarioState } from './diff-state.js';

export const CSI_DRIVER = 'diff.csi.topovol.dev';
export const PROVISIONER = 'diff.csi.topovol.dev';
/** Nodes and pods of a scenario carry this label, so the scheduler places a scenario's pods on its own nodes only. */
export const SCENARIO_LABEL = 'diff.topovol.dev/scenario';

type PVSpec = NonNullable<PersistentVolume['spec']>;
type ClaimSpec = NonNullable<PersistentVolumeClaim['spec']>;

export interface VolumeOptions {
  class?: string;
  /**
   * claimRef to a claim of the scenario: by name only, or with the uid of the claim as it is now;
   * `omit` leaves a field out, `asName` writes another name with that claim's uid (the API server
   * accepts both).
   */
  claimRef?: { claim: string; withUid: boolean; omit?: 'namespace' | 'name'; asName?: string };
  policy?: 'Retain' | 'Delete' | 'Recycle';
  annotations?: Record<string, string>;
  labels?: Record<string, string>;
  accessModes?: string[];
  volumeMode?: 'Block' | 'Filesystem';
  volumeAttributesClassName?: string;
  nodeAffinity?: PVSpec['nodeAffinity'];
  /** A local volume (needs nodeAffinity) instead of the default CSI volume. */
  local?: boolean;
  /** An in-tree hostPath or NFS volume instead of the default CSI volume (the plugins kube-controller-manager's binder probes). */
  inTree?: 'hostPath' | 'nfs';
  finalizers?: string[];
}

export interface ClaimOptions {
  /** null: unset (nil); the default is "". */
  class?: string | null;
  volumeName?: string;
  selector?: ClaimSpec['selector'];
  annotations?: Record<string, string>;
  accessModes?: string[];
  volumeMode?: 'Block' | 'Filesystem';
  volumeAttributesClassName?: string;
  /** A finalizer of the test's holds the claim once it is deleted, whatever uses it. */
  finalizers?: string[];
}

export interface PodOptions {
  nodeName?: string;
  /** Generic ephemeral volumes: name → class of the claim template. */
  ephemeral?: Record<string, string>;
  /** Keep it away from every node (it then waits for the scheduler forever). */
  unschedulable?: boolean;
  /** With nodeName: a node selector of its own, which the kubelet checks before it runs the pod. */
  nodeSelector?: Record<string, string>;
}

/** A volume node affinity requiring one label to have one of these values. */
export const affinity = (key: string, values: string[]): NonNullable<PVSpec['nodeAffinity']> => ({ required: { nodeSelectorTerms: [{ matchExpressions: [{ key, operator: 'In', values }] }] } });

/**
 * What a scenario runs with on one side: the same names on both (its namespace, and a prefix for
 * cluster-scoped objects), helpers that create objects the way a user or another component would,
 * and settle(), which waits until the scenario's state stopped changing.
 */
export class ScenarioContext {
  /** Classes this scenario created (full names; no scenario deletes one). */
  private readonly classes = new Set<string>();
  /**
   * For each claim name, the short name of the class it names if the scenario created that class
   * before it; null when a claim of that name was ever created otherwise (nothing is then left out).
   */
  private readonly classBefore = new Map<string, string | null>();

  constructor(
    readonly cluster: DiffCluster,
    readonly id: string,
  ) {}

  get side(): SideName {
    return this.cluster.side;
  }

  get admin(): KubeClient {
    return this.cluster.admin;
  }

  get ns(): string {
    return `diff-${this.id}`;
  }

  /** A cluster-scoped name of this scenario (volumes, classes, nodes). */
  name(s: string): string {
    return `${this.id}-${s}`;
  }

  async setup(): Promise<void> {
    await this.admin.create(Resources.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: this.ns } });
  }

  async storageClass(short: string, opts: { provisioner?: string; delayed?: boolean; allowedTopologies?: StorageClass['allowedTopologies']; isDefault?: boolean; reclaimPolicy?: 'Delete' | 'Retain' } = {}): Promise<string> {
    const name = this.name(short);
    await this.admin.create<StorageClass>(Resources.storageClasses, {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name, annotations: opts.isDefault ? { 'storageclass.kubernetes.io/is-default-class': 'true' } : undefined },
      provisioner: opts.provisioner ?? PROVISIONER,
      volumeBindingMode: opts.delayed ? 'WaitForFirstConsumer' : 'Immediate',
      allowedTopologies: opts.allowedTopologies,
      reclaimPolicy: opts.reclaimPolicy,
    });
    this.classes.add(name);
    return name;
  }

  async claimUid(claim: string): Promise<string> {
    return (await this.admin.get<PersistentVolumeClaim>(Resources.persistentVolumeClaims, claim, this.ns)).metadata!.uid!;
  }

  async pv(short: string, size: string, o: VolumeOptions = {}): Promise<string> {
    const name = this.name(short);
    const claimRef = o.claimRef
      ? {
          kind: 'PersistentVolumeClaim',
          apiVersion: 'v1',
          namespace: o.claimRef.omit === 'namespace' ? undefined : this.ns,
          name: o.claimRef.omit === 'name' ? undefined : (o.claimRef.asName ?? o.claimRef.claim),
          uid: o.claimRef.withUid ? await this.claimUid(o.claimRef.claim) : undefined,
        }
      : undefined;
    await this.admin.create<PersistentVolume>(Resources.persistentVolumes, {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name, annotations: o.annotations, labels: { [SCENARIO_LABEL]: this.id, ...o.labels }, finalizers: o.finalizers },
      spec: {
        capacity: { storage: size },
        accessModes: o.accessModes ?? ['ReadWriteOnce'],
        persistentVolumeReclaimPolicy: o.policy ?? 'Retain',
        storageClassName: o.class ?? '',
        volumeMode: o.volumeMode,
        volumeAttributesClassName: o.volumeAttributesClassName,
        claimRef,
        nodeAffinity: o.nodeAffinity,
        ...(o.local
          ? { local: { path: `/mnt/${name}` } }
          : o.inTree === 'hostPath'
            ? { hostPath: { path: `/srv/${name}` } }
            : o.inTree === 'nfs'
              ? { nfs: { server: 'nfs.example.com', path: `/export/${name}` } }
              : { csi: { driver: CSI_DRIVER, volumeHandle: name } }),
      },
    });
    return name;
  }

  /**
   * A claim. Class-less ones ("" or unset) draw from one cluster-wide pool of class-less volumes,
   * so unless they name their volume they carry a selector of this scenario's label (which every
   * volume of the scenario has): scenarios run side by side and must not take each other's volumes.
   */
  async pvc(name: string, size: string, o: ClaimOptions = {}): Promise<void> {
    const named = typeof o.class === 'string' && this.classes.has(o.class) ? o.class.slice(this.id.length + 1) : null;
    this.classBefore.set(name, this.classBefore.has(name) && this.classBefore.get(name) !== named ? null : named);
    const own = (o.class === '' || o.class === null || o.class === undefined) && !o.volumeName;
    const selector = own ? { ...o.selector, matchLabels: { ...o.selector?.matchLabels, [SCENARIO_LABEL]: this.id } } : o.selector;
    await this.admin.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      // A label and an annotation no binder reads: both binders must leave them (and the
      // finalizers) as they are (Topovol caches a projection and writes claims by merge patch).
      metadata: { name, namespace: this.ns, labels: { [CLAIM_LABEL]: name }, annotations: { [CLAIM_NOTE]: 'kept', ...o.annotations }, finalizers: o.finalizers },
      spec: {
        accessModes: o.accessModes ?? ['ReadWriteOnce'],
        resources: { requests: { storage: size } },
        storageClassName: o.class === null ? undefined : (o.class ?? ''),
        volumeName: o.volumeName,
        selector,
        volumeMode: o.volumeMode,
        volumeAttributesClassName: o.volumeAttributesClassName,
      },
    });
  }

  /** A Node object; `ready`: Ready and untainted, so that the real scheduler places pods on it. */
  async node(short: string, labels: Record<string, string> = {}, ready = true): Promise<string> {
    const name = this.name(short);
    if (ready) await createReadyNode(this.admin, name, { [SCENARIO_LABEL]: this.id, ...labels });
    else await this.admin.create<Node>(Resources.nodes, { apiVersion: 'v1', kind: 'Node', metadata: { name, labels: { 'kubernetes.io/hostname': name, [SCENARIO_LABEL]: this.id, ...labels } } });
    return name;
  }

  async pod(name: string, claims: string[], o: PodOptions = {}): Promise<void> {
    await this.admin.create<Pod>(Resources.pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: this.ns },
      spec: {
        nodeName: o.nodeName,
        nodeSelector: o.unschedulable ? { 'diff.topovol.dev/nowhere': 'true' } : o.nodeName ? o.nodeSelector : { [SCENARIO_LABEL]: this.id },
        containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }],
        volumes: [
          ...claims.map((c) => ({ name: c, persistentVolumeClaim: { claimName: c } })),
          ...Object.entries(o.ephemeral ?? {}).map(([vol, cls]) => ({
            name: vol,
            ephemeral: { volumeClaimTemplate: { spec: { accessModes: ['ReadWriteOnce'], storageClassName: cls, resources: { requests: { storage: '1Gi' } } } } },
          })),
        ],
      },
    });
  }

  async podPhase(name: string, phase: 'Running' | 'Succeeded' | 'Failed'): Promise<void> {
    await retryOnConflict(async () => {
      const p = await this.admin.get<Pod>(Resources.pods, name, this.ns);
      await this.admin.replaceStatus(Resources.pods, { ...p, status: { ...p.status, phase } });
    });
  }

  async patchClaim(name: string, patch: object): Promise<void> {
    await this.admin.patch(Resources.persistentVolumeClaims, name, this.ns, 'merge', patch);
  }

  async patchVolume(short: string, patch: object): Promise<void> {
    await this.admin.patch(Resources.persistentVolumes, this.name(short), undefined, 'merge', patch);
  }

  /** Replaces a volume after `edit`, re-reading on a conflict (the binder writes it too). */
  async editVolume(short: string, edit: (v: PersistentVolume) => void): Promise<void> {
    await retryOnConflict(async () => {
      const v = await this.admin.get<PersistentVolume>(Resources.persistentVolumes, this.name(short));
      edit(v);
      await this.admin.replace(Resources.persistentVolumes, v);
    });
  }

  async deleteClaim(name: string, opts: { force?: boolean } = {}): Promise<void> {
    if (opts.force) await deleteNow(this.admin, Resources.persistentVolumeClaims, name, this.ns);
    else await this.admin.delete(Resources.persistentVolumeClaims, name, this.ns);
  }

  /** Deletes a volume; `force` also removes its finalizers, as an administrator bypassing protection would. */
  async deleteVolume(short: string, opts: { force?: boolean } = {}): Promise<void> {
    if (opts.force) await deleteNow(this.admin, Resources.persistentVolumes, this.name(short));
    else await this.admin.delete(Resources.persistentVolumes, this.name(short));
  }

  async deletePod(name: string): Promise<void> {
    await this.admin.delete(Resources.pods, name, this.ns, { gracePeriodSeconds: 0 });
  }

  async claim(name: string): Promise<PersistentVolumeClaim> {
    return this.admin.get<PersistentVolumeClaim>(Resources.persistentVolumeClaims, name, this.ns);
  }

  /** Waits for a condition on the server (a step that must follow another component's write). */
  async until(what: string, check: () => Promise<boolean>, timeoutMs = 90_000): Promise<void> {
    await eventually(async () => {
      if (!(await check())) throw new Error(`${this.side} ${this.id}: still waiting for ${what}`);
    }, timeoutMs, 250);
  }

  /**
   * Waits until this scenario's normalised state has not changed for QUIET_MS (two re-sync periods
   * of either binder), and returns it. A state that keeps changing for `timeoutMs` is an error: a
   * binder that never settles is a finding in itself.
   */
  async settle(timeoutMs = 120_000): Promise<ScenarioState> {
    const deadline = Date.now() + timeoutMs;
    let last = '';
    let since = Date.now();
    for (;;) {
      const state = withoutClassCacheRaces(scenarioState(await this.cluster.freshView(), this.ns, `${this.id}-`), this.classBefore);
      const text = JSON.stringify(state);
      if (text !== last) {
        last = text;
        since = Date.now();
      } else if (Date.now() - since >= QUIET_MS) {
        return state;
      }
      if (Date.now() > deadline) throw new Error(`${this.side} ${this.id}: the state kept changing for ${timeoutMs} ms; last: ${text}`);
    }
  }
}

const CLASS_NOT_FOUND = /^ProvisioningFailed Warning: storageclass\.storage\.k8s\.io "([^"]+)" not found /;

/**
 * Without a claim's "storageclass ... not found" Warning for the class it names, when the scenario
 * created that class before the claim. A binder's class and claim informers are two watches: when the
 * claim's event is handled first and no volume matches, the claim is decided without its class and
 * both binders warn (upstream: `IsDelayBindingMode` takes a class its lister misses as Immediate,
 * pv_helpers.go in component-helpers, and `provisionClaim` reports `findProvisionablePlugin`'s
 * not-found as ProvisioningFailed, pv_controller.go). Which side loses that race is chance, not
 * behaviour. A class created after its claim keeps its Warning compared, which both must give.
 */
function withoutClassCacheRaces(st: ScenarioState, classBefore: ReadonlyMap<string, string | null>): ScenarioState {
  const claims = Object.fromEntries(
    Object.entries(st.claims).map(([name, c]) => {
      const cls = classBefore.get(name);
      if (!cls) return [name, c];
      const eventMessages = c.eventMessages.filter((m) => CLASS_NOT_FOUND.exec(m)?.[1] !== cls);
      if (eventMessages.length === c.eventMessages.length) return [name, c];
      const stillFailed = eventMessages.some((m) => m.startsWith('ProvisioningFailed '));
      return [name, { ...c, eventMessages, events: stillFailed ? c.events : c.events.filter((r) => r !== 'ProvisioningFailed') }];
    }),
  );
  return { ...st, claims };
}
