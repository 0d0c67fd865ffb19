import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { controllerKubeconfig, createTestNamespace, eventually, freePort, sharedControlPlane, startManagerBinary } from '@topovol/testing';
import type { ManagedProcess } from '@topovol/testing';
import { CsiTestDriver } from '@topovol/testing/csi-test-driver';
import { bindCapacityRules } from './capacity-harness.js';

/**
 * external-provisioner exits when GetPluginInfo fails or names no driver (cmd/csi-provisioner;
 * csi-lib-utils rpc.GetDriverName, "driver name is empty"): a crash loop whose reason is in the
 * previous container's log only. The manager waits instead, and /readyz says why
 * (docs/divergences.md, "A driver that answers GetPluginInfo with an error, or with no name").
 */
describe('capacity: the manager waits for its CSI driver and /readyz says why (real binary, CSI over gRPC)', function () {
  this.timeout(300_000);
  let manager: ManagedProcess | undefined;
  let driver: CsiTestDriver | undefined;
  let dir: string | undefined;
  let cp: Awaited<ReturnType<typeof sharedControlPlane>>;
  before(async function () {
    cp = await sharedControlPlane();
  });
  after(async function () {
    await manager?.stop();
    await driver?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('no socket yet, then a driver that answers no name, then one that answers: not ready with the reason, then ready', async function () {
    const ns = await createTestNamespace(cp.adminClient(), 'capwait-');
    dir = mkdtempSync(path.join(tmpdir(), 'topovol-capwait-'));
    const socket = path.join(dir, 'csi.sock');
    const probePort = await freePort();
    await bindCapacityRules(ns);
    manager = await startManagerBinary({
      name: `${ns}-manager`,
      kubeconfig: await controllerKubeconfig('capacity'),
      args: ['--controllers=capacity', '--leader-elect=false', `--csi-address=${socket}`, `--capacity-namespace=${ns}`, '--capacity-ownerref-level=-1'],
      logFile: path.join(cp.dir, `${ns}-manager.log`),
      probePort,
      waitUntilReady: false,
    });
    const readyz = async (): Promise<{ status: number; body: string }> => {
      // An exit is the failure this test is about: say so at once, with the log.
      if (!manager?.running) throw new Error(`the manager exited:\n${manager?.logTail(20) ?? ''}`);
      const res = await fetch(`http://127.0.0.1:${probePort}/readyz?verbose`, { signal: AbortSignal.timeout(2_000) });
      return { status: res.status, body: await res.text() };
    };
    const why = `setting up: waiting for the CSI driver at ${socket}: `;
    await eventually(async () => {
      const r = await readyz();
      expect(r.status).to.equal(500);
      expect(r.body).to.contain(why);
    }, 90_000);
    expect(manager.running, 'still running: no exit into a crash loop').to.equal(true);

    driver = new CsiTestDriver({ name: '' });
    await driver.start(socket);
    await eventually(async () => expect((await readyz()).body).to.contain(`${why}Error: GetPluginInfo answered no name (give --driver-name, or fix the driver)`), 90_000);
    expect(manager.running).to.equal(true);

    await driver.stop();
    driver = new CsiTestDriver({ name: `${ns}.csi.test` });
    await driver.start(socket);
    await eventually(async () => expect((await readyz()).status).to.equal(200), 90_000);
  });
});
