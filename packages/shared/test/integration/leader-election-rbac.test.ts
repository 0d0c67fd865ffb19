import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { LeaderElector, Resources } from '../../src/index.js';
import type { ControllerDescriptor, Lease } from '../../src/index.js';
import { INSTALL_NAMESPACE, leaderElectionRules } from '@topovol/manifests';
import { controllerClient, describeRuleNecessity, pollUntil } from '@topovol/testing';
import type { NecessityScenario } from '@topovol/testing';

// The leader-election Role of config/rbac (one per loop; pv-binder's here): create, and get and
// update of its own Lease, each shown needed by a real LeaderElector acquiring a fresh Lease and
// renewing it twice.
const LEASE = 'topovol-pv-binder';

const leaseScenario: NecessityScenario = async (client, admin) => {
  await admin.delete(Resources.leases, LEASE, INSTALL_NAMESPACE).catch(() => undefined);
  const identity = `rbac-${randomBytes(3).toString('hex')}`;
  const elector = new LeaderElector(
    client,
    { namespace: INSTALL_NAMESPACE, name: LEASE, identity, leaseDurationMs: 4_000, renewDeadlineMs: 3_000, retryPeriodMs: 300 },
    { onStartedLeading: () => undefined, onStoppedLeading: () => undefined },
  );
  void elector.run();
  const ac = new AbortController();
  const renewTime = async (): Promise<string | undefined> => {
    const l = await admin.get<Lease>(Resources.leases, LEASE, INSTALL_NAMESPACE);
    expect(l.spec?.holderIdentity).to.equal(identity);
    return l.spec?.renewTime;
  };
  const reached = (async () => {
    let seen: string | undefined;
    await pollUntil(async () => (seen = await renewTime()), ac.signal);
    for (let i = 0; i < 2; i++) {
      const before = seen;
      await pollUntil(async () => expect((seen = await renewTime())).to.not.equal(before), ac.signal);
    }
  })();
  return {
    reached,
    stop: async () => {
      ac.abort();
      await elector.stop();
    },
  };
};

const leaderElection: ControllerDescriptor = {
  name: 'leader-election',
  description: "a loop's leader-election Role",
  rbac: leaderElectionRules([LEASE]),
  setup: () => {
    throw new Error('not a loop');
  },
};

describeRuleNecessity(leaderElection, leaseScenario, { controlClient: () => controllerClient('pv-binder') });
