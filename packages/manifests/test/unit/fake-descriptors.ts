import type { ControllerDescriptor, FlagSpec, PolicyRule } from '@topovol/shared';

/** A descriptor whose setup is never called: the renderers only read names, rules and flags. */
export function fakeDescriptor(name: string, rbac: PolicyRule[], extra: Partial<ControllerDescriptor> = {}, flags: FlagSpec[] = []): ControllerDescriptor {
  return {
    name,
    description: `does ${name} things`,
    rbac,
    flags,
    setup: () => {
      throw new Error('not in manifest tests');
    },
    ...extra,
  };
}

/** Three loops as the manifests tests need them: one '*' starts, the CSI-side one, and an opt-in one. */
export function fakeLoops(): ControllerDescriptor[] {
  return [
    fakeDescriptor('pv-binder', [{ apiGroups: [''], resources: ['persistentvolumes'], verbs: ['get'] }]),
    fakeDescriptor('capacity', [{ apiGroups: ['storage.k8s.io'], resources: ['csistoragecapacities'], verbs: ['create'] }], { disabledByDefault: true }),
    fakeDescriptor('rollback', [{ apiGroups: [''], resources: ['pods'], verbs: ['patch'] }], { disabledByDefault: true }),
  ];
}
