import type { ControllerDescriptor } from '@topovol/shared';
import { setupRollback } from './rollback/rollback-controller.js';
import { rollbackFlags } from './rollback/rollback-flags.js';

/** Volume provisioning rollback (kubernetes #94217): see docs/rollback.md. */
export const rollbackDescriptor: ControllerDescriptor = {
  name: 'rollback',
  description: 'undoes still-unused volumes when a pod has to move to another node',
  // Opt-in: it deletes and re-creates claims, which an operator should choose knowingly.
  disabledByDefault: true,
  flags: rollbackFlags,
  rbac: [
    // get: the volume's mark re-read from the server right before a claim is deleted. patch: the
    // marks, and the reclaim policy held Retain while a rolled-back claim goes (held-volume.ts).
    { apiGroups: [''], resources: ['persistentvolumes'], verbs: ['get', 'list', 'watch', 'patch'] },
    // patch: a claim the rollback keeps after it may have sent its delete is fenced (one
    // annotation, conditional on the resourceVersion checked), so a late delete cannot land.
    { apiGroups: [''], resources: ['persistentvolumeclaims'], verbs: ['get', 'list', 'watch', 'create', 'delete', 'patch'] },
    // list: the namespace's pods read from the server right before and right after a claim delete,
    // and the pod a rollback is recorded for, listed by name (that the server still has it).
    { apiGroups: [''], resources: ['pods'], verbs: ['list', 'watch'] },
    // update pods/finalizers: a generic ephemeral volume's claim is re-created with its pod as owner
    // and blockOwnerDeletion, which OwnerReferencesPermissionEnforcement admits only from who may
    // update the owner's finalizers (plugin/pkg/admission/gc); upstream's ephemeral-volume-controller,
    // which creates those claims, has the same grant (plugin/pkg/auth/authorizer/rbac/bootstrappolicy/
    // controller_policy.go). Without it, under that plugin, the claim's delete would land and its
    // re-create be refused. No API writes pods/finalizers; it is only what the plugin asks about.
    { apiGroups: [''], resources: ['pods/finalizers'], verbs: ['update'] },
    // The same for a StatefulSet replica's claim under a persistentVolumeClaimRetentionPolicy with
    // whenDeleted: Delete: the StatefulSet controller owns it with blockOwnerDeletion
    // (`addControllerRef` in pkg/controller/statefulset/stateful_set_utils.go), and has this grant
    // itself (controller_policy.go). (whenScaled: Delete makes the pod the owner, and only of the
    // claims of scaled-down replicas, which no pod of the StatefulSet uses.)
    { apiGroups: ['apps'], resources: ['statefulsets/finalizers'], verbs: ['update'] },
    { apiGroups: [''], resources: ['nodes'], verbs: ['list', 'watch'] },
    // get: the pod's namespace when a rollback is recorded (its uid), and before a deleted claim is
    // re-created, that the namespace still has that uid (not another made since under the name).
    { apiGroups: [''], resources: ['namespaces'], verbs: ['get'] },
    { apiGroups: ['storage.k8s.io'], resources: ['volumeattachments'], verbs: ['list', 'watch'] },
    // Whether a failed claim's class binds on first consumer: only then is a removed selected node
    // the provisioner's reschedule signal (stuck-evidence.ts).
    { apiGroups: ['storage.k8s.io'], resources: ['storageclasses'], verbs: ['list', 'watch'] },
    { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch', 'list', 'watch'] },
    // The rollbacks it records, advances, and forgets after --rollback-history-ttl.
    { apiGroups: ['topovol.io'], resources: ['provisioningrollbacks'], verbs: ['list', 'watch', 'create', 'delete'] },
    { apiGroups: ['topovol.io'], resources: ['provisioningrollbacks/status'], verbs: ['update'] },
  ],
  setup: setupRollback,
};
