import { isNotFound, Resources } from '@topovol/shared';
import type { KubeClient, KubeObject, PersistentVolume, PersistentVolumeClaim, Pod, ResourceType } from '@topovol/shared';
import { usageOf } from './marks.js';

/**
 * What a rollback reads from the server, not the cache, right before and after a claim's delete:
 * the informers may lag a write or two behind (a pod just bound, a volume just marked used).
 */
export interface RollbackServerReads {
  claim(namespace: string, name: string): Promise<PersistentVolumeClaim | undefined>;
  /** The namespace's pods, listed from the server. */
  pods(namespace: string): Promise<Pod[]>;
  /** Why the volume may hold data now (its live mark, any other evidence), or undefined while it is provably unused. */
  volumeUse(volumeName: string): Promise<string | undefined>;
}

async function getOrUndefined<T extends KubeObject>(client: KubeClient, resource: ResourceType, name: string, ns?: string): Promise<T | undefined> {
  try {
    return await client.get<T>(resource, name, ns);
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/**
 * The reads through `client`. A volume's usage is the label as the server has it (the admission
 * policy keeps anyone else from setting unused), then `evidence`: what else says it may hold data.
 */
export function liveReads(client: KubeClient, evidence: (live: PersistentVolume) => string | undefined): RollbackServerReads {
  return {
    claim: (ns, name) => getOrUndefined<PersistentVolumeClaim>(client, Resources.persistentVolumeClaims, name, ns),
    pods: async (ns) => (await client.list<Pod>(Resources.pods, { namespace: ns })).items,
    volumeUse: async (name) => {
      const live = await getOrUndefined<PersistentVolume>(client, Resources.persistentVolumes, name);
      if (!live) return 'it is gone';
      if (usageOf(live) !== 'unused') return `its mark is ${usageOf(live) ?? 'missing'}`;
      return evidence(live);
    },
  };
}
