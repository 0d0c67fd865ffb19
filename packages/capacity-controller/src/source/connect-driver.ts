import { labelValueProblem } from '@topovol/shared';
import { withCsiRetry } from '@topovol/shared/csi';
import type { PluginInfo } from '@topovol/shared/csi';

/** What connecting needs of a CSI client: its plugin info. */
export interface PluginInfoSource {
  getPluginInfo(): Promise<PluginInfo>;
}

export interface ConnectOptions {
  /** First pause between tries, doubled up to maxDelayMs (defaults 250 ms and 10 s). */
  initialDelayMs?: number;
  maxDelayMs?: number;
  /** Called before each pause: what failed and which try it was. */
  onRetry?: (err: unknown, attempt: number) => void;
  /**
   * An answer without a name is waited on as a failed one (no --driver-name gives it):
   * csi-lib-utils' GetDriverName fails on it and external-provisioner exits, a crash loop over a
   * driver that may be still starting or will be fixed; the wait says why in /readyz instead.
   */
  requireName?: boolean;
}

/**
 * Asks the driver for its plugin info until it answers, however long that takes: a sidecar may
 * start before its driver, and a socket this process may not open (the driver's own user and
 * mode) or a wrong --csi-address only an operator can fix. external-provisioner waits the same
 * way (kubernetes-csi/csi-lib-utils, connection.Connect: "Still connecting"); giving up and
 * exiting only turned the wait into a crash loop, each restart starting over.
 */
export function connectToDriver(csi: PluginInfoSource, opts: ConnectOptions = {}): Promise<PluginInfo> {
  const ask = async (): Promise<PluginInfo> => {
    const info = await csi.getPluginInfo();
    if (opts.requireName && !info.name) throw new Error('GetPluginInfo answered no name (give --driver-name, or fix the driver)');
    // It goes into label values and selectors, as --driver-name would (checked at start).
    const problem = opts.requireName ? labelValueProblem(info.name) : undefined;
    if (problem) throw new Error(`GetPluginInfo answered a name no CSI driver may have: ${problem} (give --driver-name, or fix the driver)`);
    return info;
  };
  return withCsiRetry(ask, {
    attempts: Infinity,
    initialDelayMs: opts.initialDelayMs ?? 250,
    maxDelayMs: opts.maxDelayMs ?? 10_000,
    retryable: () => true,
    onRetry: opts.onRetry,
  });
}
