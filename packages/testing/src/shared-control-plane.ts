import { ControlPlane } from './control-plane.js';

let shared: Promise<ControlPlane> | undefined;

/**
 * Admission that clusters turn on and kube-apiserver leaves off by default, so that the loops'
 * identities meet it here first. OwnerReferencesPermissionEnforcement (on in OpenShift): changing an
 * object's ownerReferences needs delete on the object, and an owner reference with
 * blockOwnerDeletion needs update on the owner's `finalizers` subresource (plugin/pkg/admission/gc).
 */
const SHARED_API_SERVER_FLAGS: readonly string[] = ['--enable-admission-plugins=OwnerReferencesPermissionEnforcement'];

/**
 * The control plane shared by every integration test in this process: started on first use (so
 * unit-only runs never build or start it), stopped by the mocha global teardown and at exit.
 * Tests that need the control plane fail loudly if it cannot start; they are never skipped.
 */
export function sharedControlPlane(): Promise<ControlPlane> {
  shared ??= (async () => {
    const cp = new ControlPlane({ apiServerFlags: [...SHARED_API_SERVER_FLAGS] });
    await cp.start();
    return cp;
  })();
  return shared;
}

export async function stopSharedControlPlane(): Promise<void> {
  if (!shared) return;
  const p = shared;
  shared = undefined;
  try {
    await (await p).stop();
  } catch {
    // it never started: nothing to stop
  }
}
