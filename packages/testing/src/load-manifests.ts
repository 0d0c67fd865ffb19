import { loadAll } from 'js-yaml';
import type { KubeObject } from '@topovol/shared';

/**
 * The documents of a multi-document YAML file as plain JSON objects, as kubectl sends them.
 * client-node's loadAllYaml maps them onto its typed models, which renames keys such as
 * `x-kubernetes-int-or-string` and breaks CRDs, so it is not used for manifests.
 */
export function loadManifests(text: string): KubeObject[] {
  return loadAll(text).filter((d): d is KubeObject => typeof d === 'object' && d !== null);
}
