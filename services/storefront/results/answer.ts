// A computed product answer (browse, search, blocks, similar products) as the results cache holds it:
// `<meta JSON>\n<envelope JSON>` — what the request event and the headers need, then the response envelope
// serialized once without its attributionToken (per request). Decoded once per in-process cache entry: the
// meta parsed, the envelope kept as its UTF-8 bytes, so a HIT neither parses nor encodes anything; the
// request's token is appended to a copy of those bytes.
//
// Bytes, not a string: a string body (the cached envelope concatenated with the token) is flattened,
// measured (`Buffer.byteLength`) and UTF-8-encoded again on every request. A profile of search HITs on the
// demo store (≈ 140 KB answers, 50 connections) had those two at 48 % of the main thread; copying the bytes
// is a memcpy. The copies come from a pool of reused buffers, taken back once the response has been handed
// to the socket ('finish'): a fresh 140 KB buffer per response tripled the V8 GC threads' CPU (external
// memory drives its collections), which cost the other core what the main thread saved.
//
// Compressed for clients that accept gzip (every browser and HTTP library): the envelope is deflated once
// per cache entry, up to a sync flush (byte-aligned, not final), and each response appends its token as
// a final stored block, then the gzip trailer, whose CRC-32 continues the envelope's. One standard gzip
// member (RFC 1952, RFC 1951 §3.2.4): a 120-140 KB answer of the demo store goes out as ≈ 11 KB, with
// no per-request compression work but a CRC over the token's few bytes.
import { crc32, constants, deflateRawSync } from 'node:zlib';
import { Negotiator } from '@fastify/accept-negotiator';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { recordJson } from './rendered.ts';

export interface Answer<M> {
  meta: M;
  /** the envelope's JSON as UTF-8, up to, not including, its closing brace */
  head: Buffer;
  /** the gzip header and `head` deflated up to a sync flush, and head's CRC-32 (made on first use) */
  gzip?: { prefix: Buffer; crc: number };
}

/**
 * `<meta JSON>\n<envelope JSON>`, the envelope as JSON.stringify writes it. An envelope whose first field is
 * `results` (every product answer's) is written with each record's remembered JSON (results/rendered.ts)
 * spliced in, so a record shown again is not serialized again; the bytes are the same.
 */
export function encodeAnswer(meta: unknown, envelope: unknown): string {
  const head = JSON.stringify(meta);
  const e = envelope as Record<string, unknown> | null;
  if (e && typeof e === 'object' && !Array.isArray(e) && Array.isArray(e.results)) {
    for (const first in e) {
      if (first !== 'results') break;
      const { results, ...rest } = e as { results: unknown[] };
      const tail = JSON.stringify(rest);
      const items = results.map((r) =>
        r !== null && typeof r === 'object' ? recordJson(r) : (JSON.stringify(r) ?? 'null'),
      );
      return `${head}\n{"results":[${items.join(',')}]${tail === '{}' ? '}' : `,${tail.slice(1)}`}`;
    }
  }
  return `${head}\n${JSON.stringify(envelope)}`;
}

/** a cached answer from its UTF-8 bytes (results/cache.ts): `head` is a view of them, not a copy */
export function decodeAnswer<M>(bytes: Buffer): Answer<M> {
  const nl = bytes.indexOf(0x0a);
  return { meta: JSON.parse(bytes.toString('utf8', 0, nl)) as M, head: bytes.subarray(nl + 1, bytes.length - 1) };
}

/** Reused response buffers by power-of-two size, at most POOL_BYTES of them idle. */
const POOL_BYTES = 16 * 1024 * 1024;
const pool = new Map<number, Buffer[]>();
let pooled = 0;

function take(size: number): Buffer {
  const cls = size <= 4096 ? 4096 : 2 ** Math.ceil(Math.log2(size));
  const free = pool.get(cls);
  const b = free?.pop();
  if (b) {
    pooled -= cls;
    return b;
  }
  return Buffer.allocUnsafeSlow(cls);
}

function give(b: Buffer): void {
  if (pooled + b.length > POOL_BYTES) return;
  let free = pool.get(b.length);
  if (!free) pool.set(b.length, (free = []));
  free.push(b);
  pooled += b.length;
}

const encodings = new Negotiator({ supportedValues: ['gzip', 'identity'] });
/** a gzip member's header: magic, deflate, no flags, no mtime, no extra flags, unknown OS */
const GZIP_HEADER = Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff]);

function gzipPrefix(head: Buffer): { prefix: Buffer; crc: number } {
  const deflated = deflateRawSync(head, { level: 6, finishFlush: constants.Z_SYNC_FLUSH });
  return { prefix: Buffer.concat([GZIP_HEADER, deflated]), crc: crc32(head) };
}

/** The answer gzipped into `take`n bytes: the cached prefix, the tail as a final stored block, the trailer. */
function gzipped(answer: Answer<unknown>, tail: string): { buffer: Buffer; size: number } {
  answer.gzip ??= gzipPrefix(answer.head);
  const { prefix, crc } = answer.gzip;
  const bytes = Buffer.from(tail, 'utf8');
  const size = prefix.length + 5 + bytes.length + 8;
  const buffer = take(size);
  prefix.copy(buffer);
  let at = prefix.length;
  // BFINAL = 1, BTYPE = 00 (stored), padded to the byte; LEN and its one's complement, little-endian
  buffer[at++] = 1;
  at = buffer.writeUInt16LE(bytes.length, at);
  at = buffer.writeUInt16LE(~bytes.length & 0xffff, at);
  at += bytes.copy(buffer, at);
  at = buffer.writeUInt32LE(crc32(bytes, crc), at);
  buffer.writeUInt32LE((answer.head.length + bytes.length) % 2 ** 32, at);
  return { buffer, size };
}

/** the plain answer into `take`n bytes */
function plain(answer: Answer<unknown>, tail: string): { buffer: Buffer; size: number } {
  const size = answer.head.length + Buffer.byteLength(tail);
  const buffer = take(size);
  answer.head.copy(buffer);
  buffer.write(tail, answer.head.length, 'utf8');
  return { buffer, size };
}

/** the answer's envelope with this request's attributionToken, as JSON (gzipped when the client accepts it) */
export function sendAnswer(
  req: FastifyRequest,
  reply: FastifyReply,
  answer: Answer<unknown>,
  attributionToken: string,
): FastifyReply {
  const tail = `,"attributionToken":${JSON.stringify(attributionToken)}}`;
  reply.header('vary', 'accept-encoding').type('application/json; charset=utf-8');
  const accept = req.headers['accept-encoding'];
  const gzip = accept !== undefined && encodings.negotiate(accept) === 'gzip';
  if (gzip) reply.header('content-encoding', 'gzip');
  const { buffer, size } = gzip ? gzipped(answer, tail) : plain(answer, tail);
  // 'finish': the bytes are with the kernel; a response that never finishes (the client went away) leaves its
  // buffer to the garbage collector
  reply.raw.once('finish', () => give(buffer));
  return reply.send(buffer.subarray(0, size) as never);
}
