// Loaded with mocha's --require by the integration suite: the shared control plane stops when the
// run ends, whatever the outcome.
import { stopSharedControlPlane } from './shared-control-plane.js';

export async function mochaGlobalTeardown(): Promise<void> {
  await stopSharedControlPlane();
}
