import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Resources } from '@topovol/shared';
import type { KubeClient, KubeObject, ResourceType } from '@topovol/shared';
import { INSTALL_NAMESPACE } from '../../../src/index.js';
import { loadManifests } from '@topovol/testing';
import type { ControlPlane } from '@topovol/testing';
import { CsiTestDriver } from '@topovol/testing/csi-test-driver';

const apps = (plural: string, kind: string): ResourceType => ({ group: 'apps', version: 'v1', plural, kind, namespaced: true });
const APPS = { Deployment: apps('deployments', 'Deployment'), ReplicaSet: apps('replicasets', 'ReplicaSet'), DaemonSet: apps('daemonsets', 'DaemonSet') };

interface Workload extends KubeObject {
  spec: { selector: unknown; template: { metadata?: { labels?: Record<string, string> }; spec: unknown } };
}

function ownedBy(o: KubeObject): { apiVersion: string; kind: string; name: string; uid: string; controller: boolean } {
  return { apiVersion: o.apiVersion ?? '', kind: o.kind ?? '', name: o.metadata?.name ?? '', uid: o.metadata?.uid ?? '', controller: true };
}

/**
 * What the workload controllers would have made of a config/manager Deployment or DaemonSet: the
 * workload itself, for a Deployment its ReplicaSet, and one pod from the template, each owning the
 * next (nothing runs the pod: no kubelet). Returns the pod's name, the manager's $POD_NAME, so that
 * --capacity-ownerref-level resolves as in a cluster. Names are prefixed with `prefix`.
 */
export async function createWorkloadPod(admin: KubeClient, root: string, file: string, prefix: string): Promise<string> {
  const w = loadManifests(readFileSync(path.join(root, file), 'utf8')).find((d) => d.kind === 'Deployment' || d.kind === 'DaemonSet') as Workload | undefined;
  if (!w) throw new Error(`${file}: no Deployment or DaemonSet`);
  const ns = INSTALL_NAMESPACE;
  const name = `${prefix}-${w.metadata?.name ?? 'manager'}`;
  const type = w.kind === 'Deployment' ? APPS.Deployment : APPS.DaemonSet;
  let owner = await admin.create<KubeObject>(type, { ...w, metadata: { ...w.metadata, name, namespace: ns } });
  if (w.kind === 'Deployment') {
    owner = await admin.create<KubeObject>(APPS.ReplicaSet, {
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      metadata: { name: `${name}-5d8f7`, namespace: ns, ownerReferences: [ownedBy(owner)] },
      spec: { replicas: 1, selector: w.spec.selector, template: w.spec.template },
    } as KubeObject);
  }
  const pod = await admin.create<KubeObject>(Resources.pods, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: `${owner.metadata?.name ?? name}-x7k2q`, namespace: ns, labels: w.spec.template.metadata?.labels, ownerReferences: [ownedBy(owner)] },
    spec: w.spec.template.spec,
  } as KubeObject);
  return pod.metadata?.name ?? '';
}

/**
 * The project's CSI test driver in place of the workload's driver container, with the cluster
 * objects a driver's install brings: its CSIDriver and a WaitForFirstConsumer StorageClass.
 */
export async function startCsiTestDriver(admin: KubeClient, cp: ControlPlane, prefix: string): Promise<CsiTestDriver> {
  const name = `${prefix}.csi.topovol.test`;
  const driver = new CsiTestDriver({ name, controllerCapabilities: ['CREATE_DELETE_VOLUME', 'GET_CAPACITY'], capacity: [{ segment: {}, capacity: 4n << 30n }] });
  await driver.start(`unix://${path.join(cp.dir, `${prefix}-csi.sock`)}`);
  await admin.create(Resources.csiDrivers, { apiVersion: 'storage.k8s.io/v1', kind: 'CSIDriver', metadata: { name }, spec: { attachRequired: false } });
  await admin.create(Resources.storageClasses, {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name: `${prefix}-fast` },
    provisioner: name,
    volumeBindingMode: 'WaitForFirstConsumer',
  } as KubeObject);
  return driver;
}
