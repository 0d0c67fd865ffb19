import { Client, Metadata, credentials, status as GrpcStatus } from '@grpc/grpc-js';
import type { MethodDefinition, ServiceError } from '@grpc/grpc-js';
import { csiGrpcTarget } from './csi-endpoint.js';
import { CsiError } from './csi-error.js';
import { csiServices } from './csi-proto.js';
import type { CsiServices } from './csi-proto.js';
import {
  DEFAULT_VOLUME_CAPABILITY,
  fromWireVolume,
  int64,
  toWireCapability,
  toWireTopology,
} from './csi-types.js';
import type {
  Capacity,
  ControllerRpcType,
  CreateVolumeParams,
  CsiVolume,
  GetCapacityParams,
  PluginCapabilities,
  PluginInfo,
  PluginServiceType,
  VolumeExpansionType,
} from './csi-types.js';

export interface CsiClientOptions {
  /** Deadline of each call unless the call gives its own (default 10 s, external-provisioner's --timeout). */
  timeoutMs?: number;
}

export interface CsiCallOptions {
  timeoutMs?: number;
  /** Cancels the call (it then fails with CANCELLED). */
  signal?: AbortSignal;
}

const DEFAULT_TIMEOUT_MS = 10_000;

/**
 * A CSI v1 Identity + Controller client over the driver's unix socket. Every call has a deadline;
 * every failure is a CsiError carrying the gRPC status code. One channel per client: create one per
 * driver and close() it when done.
 */
export class CsiClient {
  readonly target: string;
  private readonly client: Client;
  private readonly services: CsiServices;
  private readonly timeoutMs: number;

  constructor(endpoint: string, opts: CsiClientOptions = {}) {
    this.target = csiGrpcTarget(endpoint);
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.services = csiServices();
    // Reconnect to a driver that went away every second at most, as csi-lib-utils' connection.Connect
    // does (backoff MaxDelay 1 s): grpc-js's default grows to 120 s, and a driver that came back would
    // go unseen for up to two minutes, calls failing at once meanwhile.
    this.client = new Client(this.target, credentials.createInsecure(), { 'grpc.max_reconnect_backoff_ms': 1000 });
  }

  /** Resolves once the socket is connected; rejects with UNAVAILABLE if it is not within timeoutMs. */
  waitForReady(timeoutMs = this.timeoutMs): Promise<void> {
    return new Promise((resolve, reject) => {
      this.client.waitForReady(Date.now() + timeoutMs, (err) => {
        if (err) reject(new CsiError('connect', GrpcStatus.UNAVAILABLE, `${this.target}: ${err.message}`));
        else resolve();
      });
    });
  }

  async getPluginInfo(opts?: CsiCallOptions): Promise<PluginInfo> {
    const res = await this.unary('GetPluginInfo', this.services.identity.GetPluginInfo, {}, opts);
    return { name: res.name ?? '', vendorVersion: res.vendorVersion ?? '', manifest: { ...(res.manifest ?? {}) } };
  }

  async getPluginCapabilities(opts?: CsiCallOptions): Promise<PluginCapabilities> {
    const res = await this.unary('GetPluginCapabilities', this.services.identity.GetPluginCapabilities, {}, opts);
    const services = new Set<PluginServiceType>();
    let volumeExpansion: VolumeExpansionType | undefined;
    for (const c of res.capabilities ?? []) {
      const s = c.service?.type;
      if (typeof s === 'string' && s !== 'UNKNOWN') services.add(s);
      const e = c.volumeExpansion?.type;
      if (typeof e === 'string' && e !== 'UNKNOWN') volumeExpansion = e;
    }
    return {
      services,
      controllerService: services.has('CONTROLLER_SERVICE'),
      volumeAccessibilityConstraints: services.has('VOLUME_ACCESSIBILITY_CONSTRAINTS'),
      ...(volumeExpansion ? { volumeExpansion } : {}),
    };
  }

  /** CSI Probe; a driver that leaves `ready` unset is ready (the spec lets the CO assume so). */
  async probe(opts?: CsiCallOptions): Promise<{ ready: boolean }> {
    const res = await this.unary('Probe', this.services.identity.Probe, {}, opts);
    return { ready: res.ready?.value ?? true };
  }

  async controllerGetCapabilities(opts?: CsiCallOptions): Promise<ReadonlySet<ControllerRpcType>> {
    const res = await this.unary('ControllerGetCapabilities', this.services.controller.ControllerGetCapabilities, {}, opts);
    const out = new Set<ControllerRpcType>();
    for (const c of res.capabilities ?? []) {
      const t = c.rpc?.type;
      if (typeof t === 'string' && t !== 'UNKNOWN') out.add(t);
    }
    return out;
  }

  async getCapacity(params: GetCapacityParams = {}, opts?: CsiCallOptions): Promise<Capacity> {
    const res = await this.unary(
      'GetCapacity',
      this.services.controller.GetCapacity,
      {
        volumeCapabilities: (params.volumeCapabilities ?? []).map(toWireCapability),
        parameters: { ...(params.parameters ?? {}) },
        accessibleTopology: params.accessibleTopology ? toWireTopology(params.accessibleTopology) : null,
      },
      opts,
    );
    const max = res.maximumVolumeSize;
    return {
      availableCapacity: int64(res.availableCapacity),
      ...(max ? { maximumVolumeSize: int64(max.value) } : {}),
    };
  }

  async createVolume(params: CreateVolumeParams, opts?: CsiCallOptions): Promise<CsiVolume> {
    const req = params.accessibilityRequirements;
    const res = await this.unary(
      'CreateVolume',
      this.services.controller.CreateVolume,
      {
        name: params.name,
        capacityRange:
          params.requiredBytes !== undefined || params.limitBytes !== undefined
            ? { requiredBytes: (params.requiredBytes ?? 0n).toString(), limitBytes: (params.limitBytes ?? 0n).toString() }
            : null,
        volumeCapabilities: (params.volumeCapabilities ?? [DEFAULT_VOLUME_CAPABILITY]).map(toWireCapability),
        parameters: { ...(params.parameters ?? {}) },
        accessibilityRequirements: req
          ? { requisite: (req.requisite ?? []).map(toWireTopology), preferred: (req.preferred ?? []).map(toWireTopology) }
          : null,
      },
      opts,
    );
    if (!res.volume) throw new CsiError('CreateVolume', GrpcStatus.INTERNAL, 'driver returned no volume');
    return fromWireVolume(res.volume);
  }

  async deleteVolume(volumeId: string, opts?: CsiCallOptions): Promise<void> {
    await this.unary('DeleteVolume', this.services.controller.DeleteVolume, { volumeId }, opts);
  }

  close(): void {
    this.client.close();
  }

  private unary<Req, Res>(name: string, method: MethodDefinition<Req, Res>, request: Req, opts: CsiCallOptions = {}): Promise<Res> {
    return new Promise((resolve, reject) => {
      if (opts.signal?.aborted) {
        reject(new CsiError(name, GrpcStatus.CANCELLED, 'aborted before the call'));
        return;
      }
      const deadline = Date.now() + (opts.timeoutMs ?? this.timeoutMs);
      const onAbort = (): void => call.cancel();
      const call = this.client.makeUnaryRequest<Req, Res>(
        method.path,
        method.requestSerialize,
        method.responseDeserialize,
        request,
        new Metadata(),
        { deadline },
        (err: ServiceError | null, res?: Res) => {
          opts.signal?.removeEventListener('abort', onAbort);
          if (err) reject(new CsiError(name, err.code, err.details || err.message));
          else if (res === undefined) reject(new CsiError(name, GrpcStatus.INTERNAL, 'empty response'));
          else resolve(res);
        },
      );
      opts.signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}
