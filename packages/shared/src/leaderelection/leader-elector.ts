import { classifyError, isNotFound, isRefusal } from '../client/errors.js';
import type { KubeClient } from '../client/kube-client.js';
import { sleep } from '../controller/runnable.js';
import { Resources } from '../informer/resources.js';
import { errorMessage, logger } from '../logging/logger.js';
import type { Logger } from '../logging/logger.js';
import { counter, gauge } from '../metrics/registry.js';
import type { Lease } from '../types/wire.js';

export interface LeaderElectionConfig {
  namespace: string;
  name: string;
  identity: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
}

export interface LeaderCallbacks {
  onStartedLeading(): void;
  /** Called once leadership ends: lost (renew deadline passed) or released on shutdown. */
  onStoppedLeading(reason: 'lost' | 'released'): void;
  onNewLeader?(identity: string): void;
}

// client-go's metric name, so the usual "is anyone leading?" queries work.
const masterStatus = gauge<'name'>({
  name: 'leader_election_master_status',
  help: 'Whether this process currently holds the lease (1) or not (0), by lease name.',
  labelNames: ['name'],
});
const transitions = counter<'name'>({
  name: 'topovol_leader_election_transitions_total',
  help: 'Times this process acquired a lease another identity held before, by lease name.',
  labelNames: ['name'],
});
const lost = counter<'name'>({
  name: 'topovol_leader_election_lost_total',
  help: 'Times this process lost a lease it held because it could not renew it in time.',
  labelNames: ['name'],
});

const fencedWrites = counter<'name'>({
  name: 'topovol_leader_election_fenced_writes_total',
  help: 'Writes of a leading loop not sent because its last successful lease renewal had begun more than the renew deadline before (another replica may lead by then), by lease name.',
  labelNames: ['name'],
});

const JITTER = 1.2;

/** The election record of a Lease, comparable as a string. */
const recordOf = (s: NonNullable<Lease['spec']>): string =>
  JSON.stringify([s.holderIdentity ?? '', s.leaseDurationSeconds ?? 0, s.acquireTime ?? '', s.renewTime ?? '', s.leaseTransitions ?? 0]);

/**
 * Leader election on a coordination.k8s.io/v1 Lease with client-go's semantics: a held lease is
 * trusted until leaseDuration has passed since *we observed* its last change (on the local monotonic
 * clock, so neither skew between nodes nor a stepped wall clock matters); the leader renews every
 * retryPeriod and gives up once it could not renew for renewDeadline; a graceful stop releases the
 * lease so a standby takes over at its next retry.
 */
export class LeaderElector {
  private observed?: { spec: NonNullable<Lease['spec']>; at: number };
  /** Set by an attempt that found the lease validly held by another identity. */
  private takenBy?: string;
  private leading = false;
  /** A write naming this replica the holder was sent: stop() gives back what it may have taken. */
  private wroteLease = false;
  private lastRenew = 0;
  /** When the last successful acquire or renewal began (monotonic ms); writes are fenced renewDeadline after. */
  private renewBegan = 0;
  private fencing = false;
  /** Led at some time, and stopped or lost since: this process's writes for the loop are over. */
  private led = false;
  private ended = false;
  private readonly abort = new AbortController();
  private running?: Promise<void>;
  private readonly log: Logger;
  private lastLeader = '';
  /** The last refused lease write said at warn, and when (writeFailed). */
  private lastRefusal?: { message: string; at: number };

  constructor(
    private readonly client: KubeClient,
    readonly config: LeaderElectionConfig,
    private readonly callbacks: LeaderCallbacks,
    /** The monotonic clock in ms (tests move it). */
    private readonly now: () => number = monotonicMs,
  ) {
    this.log = logger().child({ lease: `${config.namespace}/${config.name}`, identity: config.identity });
    masterStatus.set({ name: config.name }, 0);
  }

  isLeader(): boolean {
    return this.leading;
  }

  /**
   * Health as client-go's HealthzAdaptor: unhealthy when we think we lead but have not renewed for
   * longer than the lease duration plus a grace period (a hung renew loop).
   */
  healthy(graceMs = 20_000): boolean {
    return !this.leading || this.now() - this.lastRenew <= this.config.leaseDurationMs + graceMs;
  }

  /**
   * Why a write of the loop must not be sent now, or undefined: only while we lead and our last
   * successful renewal began more than renewDeadline ago. A standby takes the Lease leaseDuration
   * after it saw that renewal, which it cannot have seen before the renewal began, so until then
   * only we lead, and the gap between renewDeadline and leaseDuration is left for writes already
   * sent to land. client-go stops leading after renewDeadline too, but from its renew loop, which
   * a frozen process runs only after its other work; this check runs in the write itself.
   */
  writeFence(): string | undefined {
    // Released (or lost): a standby takes the Lease at its next try, and a reconcile abandoned at
    // the shutdown timeout must not write beside it.
    if (this.led && this.ended) return `lease ${this.config.namespace}/${this.config.name} released or lost: another replica may lead`;
    if (!this.leading) return undefined;
    const since = this.now() - this.renewBegan;
    if (since <= this.config.renewDeadlineMs) {
      this.fencing = false;
      return undefined;
    }
    fencedWrites.inc({ name: this.config.name });
    if (!this.fencing) {
      this.fencing = true;
      this.log.warn('lease not renewed within the renew deadline: holding writes until it is', { sinceRenewalBeganMs: Math.round(since), renewDeadlineMs: this.config.renewDeadlineMs });
    }
    return `lease ${this.config.namespace}/${this.config.name} last renewed ${Math.round(since)} ms ago, past the renew deadline (${this.config.renewDeadlineMs} ms): another replica may lead`;
  }

  run(): Promise<void> {
    this.running ??= this.loop();
    return this.running;
  }

  /** Stops campaigning and releases the lease if held. */
  async stop(): Promise<void> {
    this.ended = true;
    this.abort.abort();
    await this.running;
    if (this.leading) {
      await this.release();
      this.setLeading(false);
      this.callbacks.onStoppedLeading('released');
    } else if (this.wroteLease) {
      // Perhaps taken just as the stop came, before this replica led (the write answered, or cut
      // off by the stop after the server had it): given back all the same, as client-go's Run goes
      // on to release under ReleaseOnCancel, or the next leader waits a whole lease duration.
      // release() gives back only a lease that names this replica.
      await this.release();
    }
  }

  private async loop(): Promise<void> {
    const signal = this.abort.signal;
    // Acquire.
    while (!signal.aborted && !(await this.tryAcquireOrRenew(this.now() + this.config.renewDeadlineMs))) await sleep(this.config.retryPeriodMs * (1 + Math.random() * (JITTER - 1)), signal);
    if (signal.aborted) return;
    this.setLeading(true);
    this.callbacks.onStartedLeading();
    // Renew until we cannot for renewDeadline.
    while (!signal.aborted) {
      await sleep(this.config.retryPeriodMs, signal);
      if (signal.aborted) return;
      const deadline = this.now() + this.config.renewDeadlineMs;
      let renewed = false;
      this.takenBy = undefined;
      while (!signal.aborted && this.now() < deadline) {
        if (await this.tryAcquireOrRenew(deadline)) {
          renewed = true;
          break;
        }
        // Another identity holds a lease it renewed: it leads now, so stop at once. client-go
        // tries again until the renew deadline (leaderelection.go, renew), writing meanwhile; a
        // process frozen past its lease would keep writing for a whole renew deadline after its
        // first look showed the new leader.
        if (this.takenBy !== undefined) break;
        await sleep(Math.min(this.config.retryPeriodMs, Math.max(0, deadline - this.now())), signal);
      }
      if (signal.aborted) return;
      if (!renewed) {
        lost.inc({ name: this.config.name });
        if (this.takenBy !== undefined) this.log.error('another identity holds the lease: leadership lost', { holder: this.takenBy });
        else this.log.error('failed to renew lease within the renew deadline: leadership lost', { renewDeadlineMs: this.config.renewDeadlineMs });
        this.ended = true;
        this.setLeading(false);
        this.callbacks.onStoppedLeading('lost');
        return;
      }
    }
  }

  private setLeading(v: boolean): void {
    this.leading = v;
    if (v) this.led = true;
    masterStatus.set({ name: this.config.name }, v ? 1 : 0);
  }

  /**
   * One try, its requests cut off at `deadline` (monotonic ms): as client-go's renew runs under a
   * context that times out at RenewDeadline, so that a slow or stalled request cannot keep a leader
   * that should have stepped down writing until the request's own timeout (60 s).
   */
  private async tryAcquireOrRenew(deadline: number): Promise<boolean> {
    // An explicit controller and timer, cleared after the try (an AbortSignal.any() over
    // AbortSignal.timeout() did not fire in leader-elector-deadline.test.ts on Node 20).
    const cut = new AbortController();
    const stop = (): void => cut.abort(this.abort.signal.reason);
    if (this.abort.signal.aborted) stop();
    this.abort.signal.addEventListener('abort', stop);
    const timer = setTimeout(() => cut.abort(new Error('renew deadline reached')), Math.max(1, deadline - this.now()));
    try {
      return await this.attempt(cut.signal);
    } finally {
      clearTimeout(timer);
      this.abort.signal.removeEventListener('abort', stop);
    }
  }

  private async attempt(signal: AbortSignal): Promise<boolean> {
    const began = this.now();
    const { namespace, name, identity } = this.config;
    const now = new Date();
    const nowIso = microTime(now);
    const leaseSeconds = Math.ceil(this.config.leaseDurationMs / 1000);
    let current: Lease | undefined;
    try {
      current = await this.client.get<Lease>(Resources.leases, name, namespace, signal);
    } catch (err) {
      if (!isNotFound(err)) {
        this.log.warn('cannot read lease', { error: errorMessage(err), errorKind: classifyError(err).kind });
        return false;
      }
    }
    if (!current) {
      this.wroteLease = true;
      try {
        await this.client.create<Lease>(Resources.leases, {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name, namespace },
          spec: { holderIdentity: identity, leaseDurationSeconds: leaseSeconds, acquireTime: nowIso, renewTime: nowIso, leaseTransitions: 0 },
        }, { signal });
        this.observe({ holderIdentity: identity, leaseDurationSeconds: leaseSeconds, acquireTime: nowIso, renewTime: nowIso, leaseTransitions: 0 });
        this.lastRenew = this.now();
        this.renewBegan = began;
        this.log.info('acquired lease (created)');
        return true;
      } catch (err) {
        this.writeFailed('create', err);
        return false;
      }
    }
    const spec = current.spec ?? {};
    this.observe(spec);
    const holder = spec.holderIdentity ?? '';
    const held = holder !== '' && holder !== identity;
    const observedAt = this.observed?.at ?? 0;
    const durationMs = (spec.leaseDurationSeconds ?? leaseSeconds) * 1000;
    if (held && this.now() < observedAt + durationMs) {
      this.takenBy = holder;
      return false;
    }

    const takingOver = holder !== identity;
    const next: Lease = {
      ...current,
      spec: {
        ...spec,
        holderIdentity: identity,
        leaseDurationSeconds: leaseSeconds,
        renewTime: nowIso,
        acquireTime: takingOver ? nowIso : spec.acquireTime,
        leaseTransitions: (spec.leaseTransitions ?? 0) + (takingOver && holder !== '' ? 1 : 0),
      },
    };
    this.wroteLease = true;
    try {
      const updated = await this.client.replace<Lease>(Resources.leases, next, { signal });
      this.observe(updated.spec ?? {});
      this.lastRenew = this.now();
      this.renewBegan = began;
      if (takingOver) {
        if (holder !== '') transitions.inc({ name });
        this.log.info('acquired lease', { previousHolder: holder || undefined });
      }
      return true;
    } catch (err) {
      this.writeFailed('update', err);
      return false;
    }
  }

  /**
   * A lease write that failed. Refused (a policy or webhook on Leases, a role without the verb):
   * no replica can lead until someone changes that, so it is said at warn, as client-go logs its
   * lease write errors at error level (tools/leaderelection/leaderelection.go), once a minute
   * while the same refusal repeats. Anything else stays at debug: a Conflict is another replica's
   * write, a 5xx or a timeout the control plane restarting, and the next try comes in a retry period.
   */
  private writeFailed(verb: 'create' | 'update', err: unknown): void {
    const error = errorMessage(err);
    const errorKind = classifyError(err).kind;
    const t = this.now();
    // 401 too: credentials no longer accepted (a token revoked or expired) keep every replica out.
    if ((isRefusal(err) || errorKind === 'Unauthorized') && (this.lastRefusal?.message !== error || t - this.lastRefusal.at >= 60_000)) {
      this.lastRefusal = { message: error, at: t };
      this.log.warn(`the API server refused the lease ${verb}: no replica can lead while it does`, { error, errorKind });
      return;
    }
    this.log.debug(`cannot ${verb} lease`, { error, errorKind });
  }

  /**
   * Remembers when the record last changed, by our clock. The record is the election's fields only,
   * as client-go compares its LeaderElectionRecord: a write to the Lease's metadata (a label, an
   * annotation, a GitOps tool) changes its resourceVersion but renews nobody, and counted as a
   * change it would keep a dead leader's lease alive for as long as such writes come.
   */
  private observe(spec: NonNullable<Lease['spec']>): void {
    const changed = !this.observed || recordOf(this.observed.spec) !== recordOf(spec);
    if (changed) this.observed = { spec, at: this.now() };
    const leader = spec.holderIdentity ?? '';
    if (leader && leader !== this.lastLeader) {
      this.lastLeader = leader;
      if (leader !== this.config.identity) this.log.info('new leader observed', { leader });
      this.callbacks.onNewLeader?.(leader);
    }
  }

  /** As client-go's ReleaseOnCancel: empty holder and a 1 s lease, so a standby takes over at once. */
  private async release(): Promise<void> {
    const { namespace, name, identity } = this.config;
    try {
      const current = await this.client.get<Lease>(Resources.leases, name, namespace);
      if (current.spec?.holderIdentity !== identity) return;
      const nowIso = microTime(new Date());
      await this.client.replace<Lease>(Resources.leases, {
        ...current,
        spec: { ...current.spec, holderIdentity: '', leaseDurationSeconds: 1, renewTime: nowIso, acquireTime: nowIso },
      });
      this.log.info('released lease');
    } catch (err) {
      this.log.warn('failed to release lease; a standby will take over after it expires', { error: errorMessage(err) });
    }
  }
}

/**
 * Intervals (lease observed, last renewal, renew deadline) on the monotonic clock, as Go's time.Since
 * does: a wall clock stepped by NTP or a VM resume must not make a standby think a live leader's lease
 * expired (two leaders) or a leader think it renewed in time. Lease timestamps stay wall time.
 */
function monotonicMs(): number {
  return performance.now();
}

/** metav1.MicroTime's wire format (RFC 3339 with microseconds). */
function microTime(d: Date): string {
  return d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}
