import { ANN_BETA_STORAGE_PROVISIONER, ANN_STORAGE_PROVISIONER, NO_PROVISIONER } from '@topovol/shared';
import type { PersistentVolumeClaim, StorageClass } from '@topovol/shared';
import { event } from './actions.js';
import type { BinderAction } from './actions.js';
import { Reasons } from './binder-reasons.js';
import { externalProvisionerName } from './csi-migration.js';

function waitingMessage(provisioner: string): string {
  return `Waiting for a volume to be created either by the external provisioner '${provisioner}' or manually by the system administrator. If volume creation is delayed, please verify that the provisioner is running and correctly registered.`;
}

/**
 * No volume matched a claim of class `cls`: hand it to the class's provisioner, as upstream's
 * provisionClaim / provisionClaimOperationExternal (pv_controller.go). The storage-provisioner
 * annotations (GA and beta) are what external provisioners watch for; the claim's status is left
 * as it is. A migrated in-tree provisioner (kubernetes.io/aws-ebs…) is named by its CSI driver. A
 * missing class and kubernetes.io/no-provisioner (which upstream looks up as an in-tree plugin and
 * does not find) are reported with upstream's ProvisioningFailed Warning.
 */
export function provisionClaim(claim: PersistentVolumeClaim, cls: string, sc: StorageClass | undefined): BinderAction[] {
  if (!sc) return [event(claim, 'Warning', Reasons.ProvisioningFailed, `storageclass.storage.k8s.io "${cls}" not found`)];
  if (sc.provisioner === NO_PROVISIONER) return [event(claim, 'Warning', Reasons.ProvisioningFailed, `no volume plugin matched name: ${NO_PROVISIONER}`)];
  // A migrated in-tree provisioner is served by its CSI driver, which answers to its own name.
  const provisioner = externalProvisionerName(sc.provisioner);
  const actions: BinderAction[] = [];
  // Upstream looks at the GA annotation only, and then writes both.
  if (claim.metadata?.annotations?.[ANN_STORAGE_PROVISIONER] !== provisioner) {
    actions.push({ kind: 'annotateClaim', claim, set: { [ANN_STORAGE_PROVISIONER]: provisioner, [ANN_BETA_STORAGE_PROVISIONER]: provisioner } });
  }
  actions.push(event(claim, 'Normal', Reasons.ExternalProvisioning, waitingMessage(provisioner)));
  return actions;
}
