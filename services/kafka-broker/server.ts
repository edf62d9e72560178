// TCP server speaking Kafka's framing: 4-byte big-endian size prefix, request header, body.
//
// Per connection:
//  - requests are decoded and dispatched in arrival order; Produce requests may run concurrently with
//    earlier Produce requests (so their fsyncs can be group-committed), any other request starts only
//    once every earlier request of the connection has completed (Kafka's one-at-a-time semantics);
//  - responses are written in request order (pipelining);
//  - reading stops while the socket's write buffer is above a high-water mark or too many requests
//    are in flight, so a slow consumer cannot make the broker buffer without bound;
//  - an oversized size prefix, a truncated frame, an unknown API key, an unadvertised version or a
//    decoder exception closes THAT connection only (and is logged).
import net from 'node:net';
import type { Logger } from 'pino';
import type { ApiDef } from './protocol/api.ts';
import { ErrorCode } from './protocol/errors.ts';
import {
  isFlexible,
  readHeaderPrefix,
  readHeaderRest,
  type RequestHeader,
  writeResponseHeader,
} from './protocol/header.ts';
import { Reader } from './protocol/reader.ts';
import { Writer } from './protocol/writer.ts';

export interface RequestContext {
  connectionId: number;
  header: RequestHeader;
  clientHost: string;
  /** aborted when the connection closes (long polls give up) */
  signal: AbortSignal;
}

/** A handler returns the response, or null for "no response" (Produce with acks=0). */
export type Handler<Req, Res> = (ctx: RequestContext, req: Req) => Res | null | Promise<Res | null>;

export interface Route<Req = any, Res = any> {
  api: ApiDef<Req, Res>;
  handle: Handler<Req, Res>;
}

export interface ServerOptions {
  host: string;
  port: number;
  routes: Route[];
  logger: Logger;
  /** largest accepted request frame; default 100 MiB */
  maxFrameBytes?: number;
  /** stop reading a connection while more than this many bytes wait to be written; default 16 MiB */
  writeHighWaterMark?: number;
  /** stop reading a connection while this many of its requests are unanswered; default 512 */
  maxInFlightPerConnection?: number;
}

export interface RunningServer {
  host: string;
  port: number;
  close(): Promise<void>;
}

interface Slot {
  header: RequestHeader;
  api: ApiDef<any, any>;
  route: Route;
  req: unknown;
  isProduce: boolean;
  started: boolean;
  done: boolean;
  /** encoded response frame; null = no response */
  parts: Buffer[] | null;
}

let nextConnectionId = 1;

class Connection {
  readonly id = nextConnectionId++;
  private readonly chunks: Buffer[] = [];
  private buffered = 0;
  /** requests not yet answered, in arrival order */
  private readonly slots: Slot[] = [];
  private runningTotal = 0;
  private runningNonProduce = 0;
  private paused = false;
  private closed = false;
  private readonly abort = new AbortController();
  private readonly clientHost: string;
  private readonly socket: net.Socket;
  private readonly server: KafkaServer;

  constructor(socket: net.Socket, server: KafkaServer) {
    this.socket = socket;
    this.server = server;
    this.clientHost = `/${socket.remoteAddress ?? 'unknown'}`;
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('drain', () => this.maybeResume());
    socket.on('error', (err) => this.server.logger.debug({ conn: this.id, err: err.message }, 'connection error'));
    socket.on('close', () => this.onClose());
  }

  private onClose(): void {
    this.closed = true;
    this.abort.abort();
    this.chunks.length = 0;
    this.buffered = 0;
    this.server.connections.delete(this);
  }

  destroy(reason: string, extra?: Record<string, unknown>, level: 'warn' | 'debug' = 'warn'): void {
    if (this.closed) return;
    this.server.logger[level]({ conn: this.id, remote: this.clientHost, reason, ...extra }, 'closing connection');
    this.closed = true;
    this.abort.abort();
    this.socket.destroy();
  }

  private onData(chunk: Buffer): void {
    if (this.closed) return;
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    this.processFrames();
  }

  private processFrames(): void {
    const maxFrame = this.server.maxFrameBytes;
    while (!this.closed && !this.paused && this.buffered >= 4) {
      const size = this.peekSize();
      if (size < 8 || size > maxFrame) {
        this.destroy('invalid frame size', { size, maxFrame });
        return;
      }
      if (this.buffered < size + 4) return;
      const frame = this.take(size + 4).subarray(4);
      this.handleFrame(frame);
      this.checkBackpressure();
    }
  }

  private peekSize(): number {
    if (this.chunks[0].length < 4) {
      const all = Buffer.concat(this.chunks, this.buffered);
      this.chunks.length = 0;
      this.chunks.push(all);
    }
    return this.chunks[0].readInt32BE(0);
  }

  /** removes n bytes from the front of the input buffer (zero-copy when they sit in one chunk) */
  private take(n: number): Buffer {
    this.buffered -= n;
    const first = this.chunks[0];
    if (first.length >= n) {
      if (first.length === n) this.chunks.shift();
      else this.chunks[0] = first.subarray(n);
      return first.subarray(0, n);
    }
    const out = Buffer.allocUnsafe(n);
    let at = 0;
    while (at < n) {
      const c = this.chunks[0];
      const want = n - at;
      if (c.length <= want) {
        c.copy(out, at);
        at += c.length;
        this.chunks.shift();
      } else {
        c.copy(out, at, 0, want);
        this.chunks[0] = c.subarray(want);
        at += want;
      }
    }
    return out;
  }

  private handleFrame(frame: Buffer): void {
    const r = new Reader(frame);
    let header: RequestHeader;
    try {
      header = readHeaderPrefix(r);
    } catch (err) {
      this.destroy('malformed request header', { err: (err as Error).message });
      return;
    }
    const route = this.server.routes.get(header.apiKey);
    if (!route) {
      this.destroy('unknown or unsupported api key', { apiKey: header.apiKey, apiVersion: header.apiVersion });
      return;
    }
    const api = route.api;
    if (header.apiVersion < api.minVersion || header.apiVersion > api.maxVersion) {
      if (api.key === 18) {
        // KIP-511: answer ApiVersions of an unknown version with a v0 body carrying UNSUPPORTED_VERSION
        // and the versions we support, so the client can retry with one of them.
        this.enqueueImmediate(header, this.server.unsupportedApiVersionsResponse(header.correlationId));
        return;
      }
      this.destroy('unsupported api version', { api: api.name, apiVersion: header.apiVersion });
      return;
    }
    let req: unknown;
    try {
      readHeaderRest(r, header, isFlexible(api, header.apiVersion));
      req = api.decode(r, header.apiVersion);
    } catch (err) {
      this.destroy('malformed request', { api: api.name, apiVersion: header.apiVersion, err: (err as Error).message });
      return;
    }
    const slot: Slot = {
      header,
      api,
      route,
      req,
      isProduce: api.key === 0,
      started: false,
      done: false,
      parts: null,
    };
    this.slots.push(slot);
    this.startReady();
  }

  private enqueueImmediate(header: RequestHeader, parts: Buffer[]): void {
    const slot: Slot = {
      header,
      api: this.server.routes.get(18)!.api,
      route: this.server.routes.get(18)!,
      req: null,
      isProduce: false,
      started: true,
      done: true,
      parts,
    };
    this.slots.push(slot);
    this.flush();
  }

  /** starts queued requests allowed to run (see the ordering rule at the top of this file) */
  private startReady(): void {
    for (const slot of this.slots) {
      if (slot.started) continue;
      const ok = slot.isProduce ? this.runningNonProduce === 0 : this.runningTotal === 0;
      if (!ok) return;
      slot.started = true;
      this.runningTotal++;
      if (!slot.isProduce) this.runningNonProduce++;
      this.run(slot);
      if (!slot.isProduce) return;
    }
  }

  private run(slot: Slot): void {
    const ctx: RequestContext = {
      connectionId: this.id,
      header: slot.header,
      clientHost: this.clientHost,
      signal: this.abort.signal,
    };
    let result: unknown;
    try {
      result = slot.route.handle(ctx, slot.req);
    } catch (err) {
      this.fail(slot, err);
      return;
    }
    if (result instanceof Promise) {
      result.then(
        (res) => this.complete(slot, res),
        (err) => this.fail(slot, err),
      );
    } else {
      this.complete(slot, result);
    }
  }

  private fail(slot: Slot, err: unknown): void {
    this.server.logger.error(
      { conn: this.id, api: slot.api.name, apiVersion: slot.header.apiVersion, err },
      'request handler failed',
    );
    this.destroy('handler failure');
  }

  private complete(slot: Slot, res: unknown): void {
    slot.req = null;
    if (this.closed) return;
    if (res !== null && res !== undefined) {
      try {
        const w = new Writer(slot.api.sizeHint ?? 256);
        writeResponseHeader(w, slot.api, slot.header);
        slot.api.encode(w, slot.header.apiVersion, res);
        slot.parts = w.finish();
      } catch (err) {
        this.fail(slot, err);
        return;
      }
    }
    slot.done = true;
    this.runningTotal--;
    if (!slot.isProduce) this.runningNonProduce--;
    this.flush();
    this.startReady();
    this.maybeResume();
  }

  /** writes the answered prefix of the queue, in request order */
  private flush(): void {
    if (this.closed) return;
    let corked = false;
    while (this.slots.length > 0 && this.slots[0].done) {
      const slot = this.slots.shift()!;
      if (slot.parts === null) continue;
      if (!corked) {
        this.socket.cork();
        corked = true;
      }
      for (const p of slot.parts) this.socket.write(p);
      slot.parts = null;
    }
    if (corked) this.socket.uncork();
    this.checkBackpressure();
  }

  private checkBackpressure(): void {
    if (this.paused || this.closed) return;
    if (this.socket.writableLength > this.server.writeHighWaterMark || this.slots.length >= this.server.maxInFlight) {
      this.paused = true;
      this.socket.pause();
    }
  }

  private maybeResume(): void {
    if (!this.paused || this.closed) return;
    if (this.socket.writableLength > this.server.writeHighWaterMark || this.slots.length >= this.server.maxInFlight)
      return;
    this.paused = false;
    this.socket.resume();
    this.processFrames();
  }
}

export class KafkaServer {
  readonly routes = new Map<number, Route>();
  readonly logger: Logger;
  readonly maxFrameBytes: number;
  readonly writeHighWaterMark: number;
  readonly maxInFlight: number;
  readonly connections = new Set<Connection>();
  private readonly server: net.Server;
  private readonly opts: ServerOptions;

  constructor(opts: ServerOptions) {
    this.opts = opts;
    this.logger = opts.logger;
    this.maxFrameBytes = opts.maxFrameBytes ?? 100 * 1024 * 1024;
    this.writeHighWaterMark = opts.writeHighWaterMark ?? 16 * 1024 * 1024;
    this.maxInFlight = opts.maxInFlightPerConnection ?? 512;
    for (const route of opts.routes) this.routes.set(route.api.key, route);
    this.server = net.createServer((socket) => {
      const conn = new Connection(socket, this);
      this.connections.add(conn);
    });
    this.server.on('error', (err) => this.logger.error({ err }, 'server error'));
  }

  listen(): Promise<RunningServer> {
    return new Promise((resolve, reject) => {
      const onError = (err: Error) => reject(err);
      this.server.once('error', onError);
      this.server.listen(this.opts.port, this.opts.host, () => {
        this.server.off('error', onError);
        const addr = this.server.address() as net.AddressInfo;
        resolve({ host: this.opts.host, port: addr.port, close: () => this.close() });
      });
    });
  }

  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const c of this.connections) c.destroy('broker shutting down', undefined, 'debug');
    this.connections.clear();
    await closed;
  }

  /** ApiVersions response (header v0, body v0) with UNSUPPORTED_VERSION and the supported table */
  unsupportedApiVersionsResponse(correlationId: number): Buffer[] {
    const w = new Writer(512);
    w.int32(correlationId);
    w.int16(ErrorCode.UNSUPPORTED_VERSION);
    w.array([...this.routes.values()], false, (w, r) => {
      w.int16(r.api.key).int16(r.api.minVersion).int16(r.api.maxVersion);
    });
    return w.finish();
  }
}
