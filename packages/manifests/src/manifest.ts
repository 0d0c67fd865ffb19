/** The install namespace: fixed because config/admission names the rollback ServiceAccount in it. */
export const INSTALL_NAMESPACE = 'topovol-system';
/** The manager image config/manager refers to; kustomize `images:` overrides it. */
export const MANAGER_IMAGE_NAME = 'ghcr.io/topovol/topovol-controller-manager';
export const MANAGER_IMAGE_TAG = 'v0.1.0';
export const MANAGER_IMAGE = `${MANAGER_IMAGE_NAME}:${MANAGER_IMAGE_TAG}`;

/** A Kubernetes object as it is written to a manifest file (plain JSON-able data). */
export interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [field: string]: unknown;
}

/** The recommended app.kubernetes.io labels for one component of the install. */
export function commonLabels(component: string): Record<string, string> {
  return {
    'app.kubernetes.io/name': 'topovol',
    'app.kubernetes.io/component': component,
    'app.kubernetes.io/part-of': 'topovol',
  };
}
