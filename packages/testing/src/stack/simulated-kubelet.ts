import type { KubeClient } from '@topovol/shared';
import { retryOnConflict } from '@topovol/shared';
import { Resources } from '@topovol/shared';
import type { Node, PersistentVolume, Pod } from '@topovol/shared';
import { csiVolumeInUseName } from '@topovol/shared';

// No kubelet runs in the stack: when a scenario needs a pod to have run, the test writes what the
// kubelet would have written, through the status subresources, as the kubelet does.

const now = (): string => new Date().toISOString().replace(/\.\d+Z$/, 'Z');

/** A scheduled pod's containers started and passed readiness: phase Running, Ready (what a StatefulSet waits for). */
export async function markPodRunning(admin: KubeClient, ns: string, name: string): Promise<void> {
  await retryOnConflict(async () => {
    const pod = await admin.get<Pod>(Resources.pods, name, ns);
    if (!pod.spec?.nodeName) throw new Error(`pod ${ns}/${name} is not scheduled: no kubelet would run it`);
    const t = now();
    const cond = (type: string): { type: string; status: string; lastTransitionTime: string } => ({ type, status: 'True', lastTransitionTime: t });
    pod.status = {
      ...pod.status,
      phase: 'Running',
      startTime: pod.status?.startTime ?? t,
      conditions: ['PodScheduled', 'Initialized', 'ContainersReady', 'Ready'].map(cond),
      containerStatuses: (pod.spec.containers ?? []).map((c) => ({ name: c.name, image: c.image ?? '', imageID: '', ready: true, restartCount: 0, started: true, state: { running: { startedAt: t } } })),
    };
    await admin.replaceStatus(Resources.pods, pod);
  });
}

/** The entry a kubelet reports in Node.status.volumesInUse for a mounted CSI volume. */
export function volumeInUseEntry(pv: PersistentVolume): string {
  return csiVolumeInUseName(pv.spec?.csi?.driver ?? '', pv.spec?.csi?.volumeHandle ?? '');
}

/** The node reports these volumes mounted (Node.status.volumesInUse), replacing what it reported before. */
export async function reportVolumesInUse(admin: KubeClient, node: string, volumes: readonly PersistentVolume[]): Promise<void> {
  await retryOnConflict(async () => {
    const n = await admin.get<Node>(Resources.nodes, node);
    n.status = { ...n.status, volumesInUse: volumes.map(volumeInUseEntry) };
    await admin.replaceStatus(Resources.nodes, n);
  });
}
