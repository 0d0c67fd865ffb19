import { randomUUID } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { Server, ServerCredentials } from '@grpc/grpc-js';
import type { ServerUnaryCall, UntypedServiceImplementation, handleUnaryCall, sendUnaryData } from '@grpc/grpc-js';
import { csiGrpcTarget, csiSocketPath } from '@topovol/shared/csi';
import { CsiError, GrpcStatus, grpcCodeName } from '@topovol/shared/csi';
import { csiServices } from '@topovol/shared/csi';
import type { ControllerRpcType, CreateVolumeParams, GetCapacityParams, PluginServiceType, TopologySegment } from '@topovol/shared/csi';
import { fromWireCapability, fromWireTopology, int64, toWireVolume } from '@topovol/shared/csi';
import type { CsiWire as W } from '@topovol/shared/csi';
import { GiB } from './byte-size.js';
import { CapacityModel } from './capacity-model.js';
import type { CapacityEntry } from './capacity-model.js';
import { CSI_METHODS, FailureInjector } from './failure-injector.js';
import type { CsiMethodName, InjectedFailure } from './failure-injector.js';
import { nodeGetInfoResponse } from './node-service.js';
import type { CsiTestDriverNode } from './node-service.js';

/** The StorageClass / GetCapacity parameter that picks a pool (absent: the default pool ''). */
export const POOL_PARAMETER = 'pool';

export interface CsiTestDriverCapacity {
  segment: TopologySegment;
  capacity: bigint;
  pool?: string;
  maximumVolumeSize?: bigint;
}

export interface CsiTestDriverOptions {
  /** GetPluginInfo name, the provisioner name StorageClasses use (default "test.csi.topovol.dev"). */
  name?: string;
  /** Must be non-empty: external-provisioner refuses a driver without one. */
  vendorVersion?: string;
  pluginCapabilities?: PluginServiceType[];
  /** An RPC left out here answers UNIMPLEMENTED, as a real driver without it would. */
  controllerCapabilities?: ControllerRpcType[];
  capacity?: CsiTestDriverCapacity[];
  /** Size of a volume whose request gives no capacity range (default 1 GiB). */
  defaultVolumeSize?: bigint;
  /**
   * Set for a driver deployed per node (one instance per node, serving that node's storage): it
   * then also answers the Node service's NodeGetInfo, which external-provisioner calls at start
   * with --node-deployment. Without it the Node service is not served (UNIMPLEMENTED).
   */
  node?: CsiTestDriverNode;
}

export interface TestDriverVolume {
  volumeId: string;
  name: string;
  pool: string;
  /** The capacity entry's segment the volume was carved from. */
  segment: TopologySegment;
  capacityBytes: bigint;
  parameters: Record<string, string>;
}

// Bounded so a long-running driver process does not grow without limit.
const MAX_RECORDED_REQUESTS = 10_000;

/**
 * Topovol's CSI test driver: Identity and Controller services over a real unix socket, with
 * capacity per topology segment and pool that CreateVolume uses up and DeleteVolume gives back,
 * per-method call counts and recorded requests, and injectable failures. Good enough for the real
 * external-provisioner to provision and delete through it.
 */
export class CsiTestDriver {
  readonly name: string;
  readonly vendorVersion: string;
  readonly capacity = new CapacityModel();
  readonly failures = new FailureInjector();
  ready = true;
  private readonly pluginCaps: PluginServiceType[];
  private readonly controllerCaps: ControllerRpcType[];
  private readonly defaultVolumeSize: bigint;
  private readonly node?: CsiTestDriverNode;
  private readonly volumesByName = new Map<string, TestDriverVolume>();
  private readonly callCounts = new Map<CsiMethodName, number>();
  private readonly recorded = { GetCapacity: [] as GetCapacityParams[], CreateVolume: [] as CreateVolumeParams[], DeleteVolume: [] as string[] };
  private readonly stalled = new Set<NodeJS.Timeout>();
  private server?: Server;
  private socketPath?: string;

  constructor(opts: CsiTestDriverOptions = {}) {
    this.name = opts.name ?? 'test.csi.topovol.dev';
    this.vendorVersion = opts.vendorVersion ?? '0.1.0';
    if (!this.vendorVersion) throw new Error('vendorVersion must not be empty');
    this.pluginCaps = opts.pluginCapabilities ?? ['CONTROLLER_SERVICE', 'VOLUME_ACCESSIBILITY_CONSTRAINTS'];
    this.controllerCaps = opts.controllerCapabilities ?? ['CREATE_DELETE_VOLUME', 'GET_CAPACITY'];
    this.defaultVolumeSize = opts.defaultVolumeSize ?? GiB;
    if (opts.node) this.node = { ...opts.node };
    for (const c of opts.capacity ?? []) this.capacity.set(c.segment, c.capacity, c);
  }

  /** The endpoint it listens on, `unix:///...`. */
  get endpoint(): string {
    if (!this.socketPath) throw new Error('CSI test driver not started');
    return csiGrpcTarget(this.socketPath);
  }

  /** Listens on the unix socket (`unix:///path` or a plain path), replacing a stale socket file. */
  async start(endpoint: string): Promise<void> {
    if (this.server) throw new Error('CSI test driver already started');
    const socketPath = path.resolve(csiSocketPath(endpoint));
    mkdirSync(path.dirname(socketPath), { recursive: true });
    rmSync(socketPath, { force: true });
    const { identity, controller, node } = csiServices();
    const server = new Server();
    server.addService(identity, this.identityHandlers());
    server.addService(controller, this.controllerHandlers());
    if (this.node) server.addService(node, this.nodeHandlers(this.node));
    await new Promise<void>((resolve, reject) => {
      server.bindAsync(csiGrpcTarget(socketPath), ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve()));
    });
    this.server = server;
    this.socketPath = socketPath;
  }

  /** Stops at once (in-flight and stalled calls are cut off) and removes the socket. */
  stop(): Promise<void> {
    for (const t of this.stalled) clearTimeout(t);
    this.stalled.clear();
    this.server?.forceShutdown();
    this.server = undefined;
    if (this.socketPath) rmSync(this.socketPath, { force: true });
    return Promise.resolve();
  }

  // ---- test controls ----

  /** Sets (or adds) the free space of a pool in a segment. */
  setCapacity(segment: TopologySegment, capacity: bigint, opts: { pool?: string; maximumVolumeSize?: bigint } = {}): void {
    this.capacity.set(segment, capacity, opts);
  }

  capacityOf(segment: TopologySegment, pool = ''): bigint | undefined {
    return this.capacity.get(segment, pool)?.capacity;
  }

  injectFailure(method: CsiMethodName, failure: InjectedFailure): void {
    this.failures.inject(method, failure);
  }

  clearFailures(method?: CsiMethodName): void {
    this.failures.clear(method);
  }

  /** Calls received for the method, failed ones included. */
  calls(method: CsiMethodName): number {
    return this.callCounts.get(method) ?? 0;
  }

  callCountsByMethod(): Record<CsiMethodName, number> {
    return Object.fromEntries(CSI_METHODS.map((m) => [m, this.calls(m)])) as Record<CsiMethodName, number>;
  }

  resetCounts(): void {
    this.callCounts.clear();
    this.recorded.GetCapacity.length = 0;
    this.recorded.CreateVolume.length = 0;
    this.recorded.DeleteVolume.length = 0;
  }

  /** The requests received (after decoding), oldest first. */
  getCapacityRequests(): readonly GetCapacityParams[] {
    return this.recorded.GetCapacity;
  }

  createVolumeRequests(): readonly CreateVolumeParams[] {
    return this.recorded.CreateVolume;
  }

  deleteVolumeRequests(): readonly string[] {
    return this.recorded.DeleteVolume;
  }

  /** Calls currently held by an injected delay. */
  get stalledCalls(): number {
    return this.stalled.size;
  }

  volumes(): TestDriverVolume[] {
    return [...this.volumesByName.values()].map((v) => ({ ...v }));
  }

  volumeByName(name: string): TestDriverVolume | undefined {
    const v = this.volumesByName.get(name);
    return v ? { ...v } : undefined;
  }

  // ---- services ----

  private identityHandlers(): UntypedServiceImplementation {
    return {
      GetPluginInfo: this.unary<W.GetPluginInfoRequest, W.GetPluginInfoResponse>('GetPluginInfo', () => ({
        name: this.name,
        vendorVersion: this.vendorVersion,
        manifest: {},
      })),
      GetPluginCapabilities: this.unary<W.GetPluginCapabilitiesRequest, W.GetPluginCapabilitiesResponse>('GetPluginCapabilities', () => ({
        capabilities: this.pluginCaps.map((type) => ({ service: { type } })),
      })),
      Probe: this.unary<W.ProbeRequest, W.ProbeResponse>('Probe', () => ({ ready: { value: this.ready } })),
    };
  }

  private controllerHandlers(): UntypedServiceImplementation {
    return {
      ControllerGetCapabilities: this.unary<W.ControllerGetCapabilitiesRequest, W.ControllerGetCapabilitiesResponse>(
        'ControllerGetCapabilities',
        () => ({ capabilities: this.controllerCaps.map((type) => ({ rpc: { type } })) }),
      ),
      GetCapacity: this.unary<W.GetCapacityRequest, W.GetCapacityResponse>('GetCapacity', (req) => this.getCapacity(req)),
      CreateVolume: this.unary<W.CreateVolumeRequest, W.CreateVolumeResponse>('CreateVolume', (req) => this.createVolume(req)),
      DeleteVolume: this.unary<W.DeleteVolumeRequest, W.DeleteVolumeResponse>('DeleteVolume', (req) => this.deleteVolume(req)),
    };
  }

  private nodeHandlers(node: CsiTestDriverNode): UntypedServiceImplementation {
    return {
      NodeGetInfo: this.unary<W.NodeGetInfoRequest, W.NodeGetInfoResponse>('NodeGetInfo', () => nodeGetInfoResponse(node)),
    };
  }

  private requireCapability(method: CsiMethodName, cap: ControllerRpcType): void {
    if (!this.controllerCaps.includes(cap)) throw new CsiError(method, GrpcStatus.UNIMPLEMENTED, `${method} is not supported (no ${cap} capability)`);
  }

  private getCapacity(req: W.GetCapacityRequest): W.GetCapacityResponse {
    this.requireCapability('GetCapacity', 'GET_CAPACITY');
    const parameters = { ...(req.parameters ?? {}) };
    const topology = req.accessibleTopology ? fromWireTopology(req.accessibleTopology) : undefined;
    record(this.recorded.GetCapacity, {
      parameters,
      ...(topology ? { accessibleTopology: topology } : {}),
      volumeCapabilities: (req.volumeCapabilities ?? []).map(fromWireCapability),
    });
    const { available, maximumVolumeSize } = this.capacity.query(topology, parameters[POOL_PARAMETER] ?? '');
    return {
      availableCapacity: available.toString(),
      maximumVolumeSize: maximumVolumeSize === undefined ? null : { value: maximumVolumeSize.toString() },
    };
  }

  private createVolume(req: W.CreateVolumeRequest): W.CreateVolumeResponse {
    this.requireCapability('CreateVolume', 'CREATE_DELETE_VOLUME');
    const name = req.name ?? '';
    const parameters = { ...(req.parameters ?? {}) };
    const required = int64(req.capacityRange?.requiredBytes);
    const limit = int64(req.capacityRange?.limitBytes);
    const requisite = (req.accessibilityRequirements?.requisite ?? []).map(fromWireTopology);
    const preferred = (req.accessibilityRequirements?.preferred ?? []).map(fromWireTopology);
    const caps = (req.volumeCapabilities ?? []).map(fromWireCapability);
    record(this.recorded.CreateVolume, {
      name,
      ...(req.capacityRange ? { requiredBytes: required, limitBytes: limit } : {}),
      volumeCapabilities: caps,
      parameters,
      ...(req.accessibilityRequirements ? { accessibilityRequirements: { requisite, preferred } } : {}),
    });
    if (!name) throw new CsiError('CreateVolume', GrpcStatus.INVALID_ARGUMENT, 'name is required');
    if (caps.length === 0) throw new CsiError('CreateVolume', GrpcStatus.INVALID_ARGUMENT, 'volume_capabilities are required');
    if (limit > 0n && required > limit) throw new CsiError('CreateVolume', GrpcStatus.OUT_OF_RANGE, `required ${required} exceeds limit ${limit}`);

    // Idempotent by name, as the spec requires: a retry gets the same volume back.
    const existing = this.volumesByName.get(name);
    if (existing) {
      const fits = existing.capacityBytes >= required && (limit === 0n || existing.capacityBytes <= limit);
      if (!fits) throw new CsiError('CreateVolume', GrpcStatus.ALREADY_EXISTS, `volume ${name} exists with ${existing.capacityBytes} bytes`);
      return { volume: this.wireVolume(existing) };
    }

    const size = required > 0n ? required : limit > 0n ? limit : this.defaultVolumeSize;
    const pool = parameters[POOL_PARAMETER] ?? '';
    const entry: CapacityEntry | undefined = this.capacity.reserve(size, pool, [...preferred, ...requisite], requisite);
    if (!entry) {
      const where = requisite.length ? ` in ${JSON.stringify(requisite)}` : '';
      throw new CsiError('CreateVolume', GrpcStatus.RESOURCE_EXHAUSTED, `no ${size} bytes free in pool '${pool}'${where}`);
    }
    const volume: TestDriverVolume = { volumeId: `tv-${randomUUID()}`, name, pool, segment: entry.segment, capacityBytes: size, parameters };
    this.volumesByName.set(name, volume);
    return { volume: this.wireVolume(volume) };
  }

  private deleteVolume(req: W.DeleteVolumeRequest): W.DeleteVolumeResponse {
    this.requireCapability('DeleteVolume', 'CREATE_DELETE_VOLUME');
    const id = req.volumeId ?? '';
    record(this.recorded.DeleteVolume, id);
    if (!id) throw new CsiError('DeleteVolume', GrpcStatus.INVALID_ARGUMENT, 'volume_id is required');
    // Unknown ids succeed: DeleteVolume is idempotent (the volume may be gone already).
    for (const [name, v] of this.volumesByName) {
      if (v.volumeId !== id) continue;
      this.volumesByName.delete(name);
      this.capacity.release(v.capacityBytes, v.pool, v.segment);
    }
    return {};
  }

  private wireVolume(v: TestDriverVolume): W.Volume {
    return toWireVolume({
      volumeId: v.volumeId,
      capacityBytes: v.capacityBytes,
      volumeContext: v.pool ? { [POOL_PARAMETER]: v.pool } : {},
      accessibleTopology: Object.keys(v.segment).length > 0 ? [v.segment] : [],
    });
  }

  /** Wraps a handler with call counting, injected failures and error-to-status mapping. */
  private unary<Req, Res>(method: CsiMethodName, impl: (req: Req) => Res): handleUnaryCall<Req, Res> {
    return (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>) => {
      this.callCounts.set(method, this.calls(method) + 1);
      const failure = this.failures.take(method);
      const finish = (): void => {
        if (failure?.code !== undefined) {
          callback({ code: failure.code, details: failure.message ?? `injected ${grpcCodeName(failure.code)}` });
          return;
        }
        try {
          callback(null, impl(call.request));
        } catch (err) {
          if (err instanceof CsiError) callback({ code: err.code, details: err.details });
          else callback({ code: GrpcStatus.INTERNAL, details: err instanceof Error ? err.message : String(err) });
        }
      };
      // A stalled or held call that the client gives up on is dropped without side effects.
      const finishUnlessCancelled = (): void => {
        if (!call.cancelled) finish();
      };
      const until = failure?.until;
      const afterHold = (): void => {
        if (until) void until.then(finishUnlessCancelled, finishUnlessCancelled);
        else finish();
      };
      if (!failure?.delayMs) {
        afterHold();
        return;
      }
      const onCancel = (): void => {
        clearTimeout(timer);
        this.stalled.delete(timer);
      };
      const timer = setTimeout(() => {
        this.stalled.delete(timer);
        call.removeListener('cancelled', onCancel);
        if (!call.cancelled) afterHold();
      }, failure.delayMs);
      this.stalled.add(timer);
      call.once('cancelled', onCancel);
    };
  }
}

function record<T>(list: T[], item: T): void {
  list.push(item);
  if (list.length > MAX_RECORDED_REQUESTS) list.splice(0, list.length - MAX_RECORDED_REQUESTS);
}

