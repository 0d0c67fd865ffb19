import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { loadManifests } from './load-manifests.js';
import { isAlreadyExists } from '@topovol/shared';
import type { KubeClient } from '@topovol/shared';
import type { KubeObject } from '@topovol/shared';
import { Resources } from '@topovol/shared';
import type { ResourceType } from '@topovol/shared';

/** YAML files under dir (recursively, sorted), kustomization files excluded. */
export function yamlFiles(dir: string): string[] {
  let out: string[] = [];
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch {
    return out;
  }
  for (const e of entries.sort()) {
    const p = path.join(dir, e);
    if (statSync(p).isDirectory()) out = out.concat(yamlFiles(p));
    else if (/\.ya?ml$/.test(e) && e !== 'kustomization.yaml') out.push(p);
  }
  return out;
}

export function resourceFor(obj: KubeObject): ResourceType | undefined {
  return Object.values(Resources).find((r) => obj.kind === r.kind && obj.apiVersion === (r.group ? `${r.group}/${r.version}` : r.version));
}

/** Each object of the well-known kinds in the YAML files, with its resource type. */
function* manifestObjects(files: string[], purpose: string): Generator<{ doc: KubeObject; r: ResourceType }> {
  for (const file of files) {
    for (const doc of loadManifests(readFileSync(file, 'utf8'))) {
      if (!doc?.kind) continue;
      const r = resourceFor(doc);
      if (!r) throw new Error(`${file}: ${doc.apiVersion}/${doc.kind} is not a kind the ${purpose}`);
      yield { doc, r };
    }
  }
}

/** Creates every object in the YAML files of the well-known kinds (as `kubectl create`), skipping existing ones. */
export async function applyManifests(client: KubeClient, files: string[], only: (doc: KubeObject) => boolean = () => true): Promise<KubeObject[]> {
  const created: KubeObject[] = [];
  for (const { doc, r } of manifestObjects(files, 'demo knows how to create')) {
    if (!only(doc)) continue;
    if (r.namespaced) doc.metadata = { namespace: 'default', ...doc.metadata };
    try {
      created.push(await client.create(r, doc));
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
    }
  }
  return created;
}

/** Server-side applies every object in the YAML files (as `kubectl apply --server-side --force-conflicts`). */
export async function applyManifestsServerSide(client: KubeClient, files: string[], fieldManager: string): Promise<KubeObject[]> {
  const applied: KubeObject[] = [];
  for (const { doc, r } of manifestObjects(files, 'tests know how to apply')) applied.push(await client.apply(r, doc, fieldManager, { force: true }));
  return applied;
}
