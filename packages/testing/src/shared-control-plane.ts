import { CLUSTER_ADMISSION_FLAGS, ControlPlane } from './control-plane.js';

let shared: Promise<ControlPlane> | undefined;

/**
 * The control plane shared by every integration test in this process: started on first use (so
 * unit-only runs never build or start it), stopped by the mocha global teardown and at exit.
 * Tests that need the control plane fail loudly if it cannot start; they are never skipped.
 */
export function sharedControlPlane(): Promise<ControlPlane> {
  shared ??= (async () => {
    const cp = new ControlPlane({ apiServerFlags: [...CLUSTER_ADMISSION_FLAGS] });
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
