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
