import type { ControllerDescriptor } from '@topovol/shared';
import { setupBinder } from './binder/binder-controller.js';
import { binderFlags } from './binder/binder-flags.js';

/**
 * The persistent volume binder: kube-controller-manager's persistentvolume-binder-controller
 * (pkg/controller/volume/persistentvolume) with KEP-490's delayed binding; see docs/divergences.md.
 */
export const pvBinderDescriptor: ControllerDescriptor = {
  name: 'pv-binder',
  description: 'binds claims to volumes, delayed binding, provisioning signals, release and reclaim',
  eventComponent: 'persistentvolume-controller',
  // kube-controller-manager's binder records with a source of component only (no host), so
  // `kubectl describe` shows "persistentvolume-controller" for either binder.
  eventInstance: false,
  // Exactly what the suites use (the audit-log coverage check and the rbac-necessity test): the
  // loop reads from its informers; its live reads are the claim before releasing its volume, the
  // node (or the namespace's pods) before removing a claim's selected node, and a pod placed with
  // spec.nodeName before binding or selecting a node for it.
  rbac: [
    { apiGroups: [''], resources: ['persistentvolumes'], verbs: ['list', 'watch', 'update'] },
    { apiGroups: [''], resources: ['persistentvolumes/status'], verbs: ['update'] },
    // Claims are written by merge patch (the claim cache holds a projection: projectClaim); a
    // claim's status by PUT only right after the bind, of the whole claim the server answered.
    { apiGroups: [''], resources: ['persistentvolumeclaims'], verbs: ['get', 'list', 'watch', 'patch'] },
    { apiGroups: [''], resources: ['persistentvolumeclaims/status'], verbs: ['update', 'patch'] },
    { apiGroups: ['storage.k8s.io'], resources: ['storageclasses'], verbs: ['list', 'watch'] },
    // list, besides the informer's: a volume is bound, or a selected node set, for a pod placed with
    // spec.nodeName only once a list of its namespace's pods shows it still there on that node (the
    // cache may still hold a deleted one) and no other pod of the claim waiting for the scheduler.
    { apiGroups: [''], resources: ['nodes', 'pods'], verbs: ['list', 'watch'] },
    // get: a selected node is removed from a claim only once a live read confirms the node is gone
    // or outside the class's allowedTopologies (the cache may lag).
    { apiGroups: [''], resources: ['nodes'], verbs: ['get'] },
    // list/watch: the external provisioner's Provisioning Events (stale selected-node check).
    { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch', 'list', 'watch'] },
  ],
  flags: binderFlags,
  setup: setupBinder,
};
