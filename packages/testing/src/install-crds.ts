import { readFileSync } from 'node:fs';
import { yamlFiles } from './apply-manifests.js';
import path from 'node:path';
import { loadManifests } from './load-manifests.js';
import type { V1CustomResourceDefinition } from '@kubernetes/client-node';
import type { Wire } from '@topovol/shared';

type Crd = Wire<V1CustomResourceDefinition>;
import type { KubeClient } from '@topovol/shared';
import { isAlreadyExists } from '@topovol/shared';
import { Resources } from '@topovol/shared';
import { repoRoot } from './repo-root.js';

/** Installs every CRD under config/crd (or dir) and waits until each is Established and its resource answers a list. */
export async function installCrds(client: KubeClient, dir = path.join(repoRoot(), 'config', 'crd')): Promise<string[]> {
  const names: string[] = [];
  const collections: string[] = [];
  for (const file of yamlFiles(dir)) {
    for (const doc of loadManifests(readFileSync(file, 'utf8')) as Crd[]) {
      if (doc?.kind !== 'CustomResourceDefinition') continue;
      try {
        await client.create(Resources.customResourceDefinitions, doc);
      } catch (err) {
        if (!isAlreadyExists(err)) throw err;
      }
      names.push(doc.metadata!.name!);
      const version = doc.spec.versions.find((v) => v.served)?.name;
      if (version) collections.push(`/apis/${doc.spec.group}/${version}/${doc.spec.names.plural}`);
    }
  }
  for (const name of names) {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const crd = await client.get<Crd>(Resources.customResourceDefinitions, name);
      if (crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')) break;
      if (Date.now() > deadline) throw new Error(`CRD ${name} not Established after 30 s`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  // Established is not yet served: a new resource's watch cache answers "storage is
  // (re)initializing" for a moment after it, which failed a suite's first request now and then.
  for (const c of collections) {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const ok = await client.request('GET', c, { query: { limit: 1 } }).then(
        () => true,
        (err: unknown) => {
          if (Date.now() > deadline) throw err;
          return false;
        },
      );
      if (ok) break;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return names;
}
