import net from 'node:net';
import { performance } from 'node:perf_hooks';
import tls from 'node:tls';

/** What the request using a connection hears of it; idle connections have none. */
export interface SocketUser {
  data(chunk: Buffer): void;
  /**
   * The connection closed: after an error (`err`), after the server ended it (`ended`: its FIN, an
   * answer read to the end is complete), or destroyed here (neither: an answer read to the end is cut).
   */
  closed(err: Error | undefined, ended: boolean): void;
}

/** One keep-alive connection of a DirectPool. */
export interface PooledSocket {
  readonly socket: net.Socket;
  /** Whether it was in the pool before the current request (a server may have closed it while idle). */
  reused: boolean;
  user?: SocketUser;
  /** performance.now() past which it is not used again (the server's `Keep-Alive: timeout`, less a second). */
  expiresAt?: number;
}

/** Where a pool connects: a host, a port and, for https, the TLS options of the agent it goes with. */
export interface PoolTarget {
  host: string;
  port: number;
  /** Absent for plain http. */
  tls?: tls.ConnectionOptions;
}

type Waiter = (s: PooledSocket | Error) => void;

/**
 * The connections of the direct transport (direct-transport.ts): at most `maxSockets` to one
 * server, idle ones kept for the next request (the most recently used first, as Node's agent
 * schedules by default), callers queued in order while every one is busy. As with Node's agent,
 * idle connections do not keep the process alive, and one the server closes (or writes to) while
 * idle leaves the pool.
 */
export class DirectPool {
  private readonly idle: PooledSocket[] = [];
  private readonly waiters: Waiter[] = [];
  private readonly all = new Set<PooledSocket>();

  constructor(
    private readonly target: PoolTarget,
    private readonly maxSockets: number,
  ) {}

  /**
   * Hands `take` a connection for one request (an idle one, a new one whose writes wait for its
   * handshake, or the next one freed) or the pool's error; returns how to give up waiting.
   */
  acquire(take: Waiter): () => void {
    const s = this.takeIdle();
    if (s) {
      s.socket.ref();
      take(s);
    } else if (this.all.size < this.maxSockets) {
      take(this.connect());
    } else {
      this.waiters.push(take);
    }
    return () => {
      const i = this.waiters.indexOf(take);
      if (i !== -1) this.waiters.splice(i, 1);
    };
  }

  /**
   * A connection fit for another request: its answer was read whole, or nothing was written on it (a
   * refused fence). `answered` carries the answer's `Keep-Alive: timeout` (undefined if it had none).
   */
  release(s: PooledSocket, answered?: { keepAliveMs: number | undefined }): void {
    s.user = undefined;
    // Whoever takes it next takes a pooled connection, which the server may close (Node's reusedSocket).
    s.reused = true;
    // As Node's agent, from each answer: retire it a second before the server said it would close it.
    if (answered) s.expiresAt = answered.keepAliveMs === undefined ? undefined : performance.now() + answered.keepAliveMs - 1000;
    if (!this.usable(s)) return void s.socket.destroy();
    const w = this.waiters.shift();
    if (w) return void w(s);
    s.socket.unref();
    this.idle.push(s);
  }

  /**
   * Closes every connection, as Node's agent.destroy() does: requests in flight fail as on a lost
   * connection, and the pool goes on (queued and later requests get new connections).
   */
  destroy(): void {
    this.idle.length = 0;
    for (const s of this.all) s.socket.destroy();
  }

  /** The most recently used idle connection still fit to write on; unfit ones are closed on the way. */
  private takeIdle(): PooledSocket | undefined {
    for (let s = this.idle.pop(); s; s = this.idle.pop()) {
      if (this.usable(s)) return s;
      s.socket.destroy();
    }
    return undefined;
  }

  private usable(s: PooledSocket): boolean {
    return !s.socket.destroyed && s.socket.writable && !s.socket.readableEnded && (s.expiresAt === undefined || performance.now() < s.expiresAt);
  }

  private connect(): PooledSocket {
    const { host, port } = this.target;
    // As Node's https agent: SNI names the host unless it is an IP address, or the kubeconfig's tls-server-name.
    const socket = this.target.tls
      ? tls.connect({ ...this.target.tls, host, port, servername: this.target.tls.servername ?? (net.isIP(host) ? undefined : host) })
      : net.connect({ host, port });
    socket.setNoDelay(true);
    socket.setKeepAlive(true, 1000);
    const s: PooledSocket = { socket, reused: false };
    this.all.add(s);
    let error: Error | undefined;
    let ended = false;
    socket.once('end', () => {
      ended = true;
    });
    // Always listened to: an idle connection's error (a reset) must not throw out of the process.
    socket.on('error', (err: Error) => {
      error ??= err;
    });
    socket.on('data', (chunk: Buffer) => {
      if (s.user) return void s.user.data(chunk);
      // Bytes nobody asked for: the connection's framing cannot be trusted any more.
      const at = this.idle.indexOf(s);
      if (at !== -1) this.idle.splice(at, 1);
      socket.destroy();
    });
    socket.once('close', () => {
      this.all.delete(s);
      const at = this.idle.indexOf(s);
      if (at !== -1) this.idle.splice(at, 1);
      s.user?.closed(error, ended);
      s.user = undefined;
      // A place freed: the next waiter gets a new connection.
      const w = this.all.size < this.maxSockets ? this.waiters.shift() : undefined;
      if (w) w(this.connect());
    });
    return s;
  }
}
