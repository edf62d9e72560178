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
import type { FastifyReply } from 'fastify';

export interface Answer<M> {
  meta: M;
  /** the envelope's JSON as UTF-8, up to, not including, its closing brace */
  head: Buffer;
}

export function encodeAnswer(meta: unknown, envelope: unknown): string {
  return `${JSON.stringify(meta)}\n${JSON.stringify(envelope)}`;
}

export function decodeAnswer<M>(raw: string): Answer<M> {
  const nl = raw.indexOf('\n');
  return { meta: JSON.parse(raw.slice(0, nl)) as M, head: Buffer.from(raw.slice(nl + 1, -1), 'utf8') };
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

/** the answer's envelope with this request's attributionToken, as JSON */
export function sendAnswer(reply: FastifyReply, answer: Answer<unknown>, attributionToken: string): FastifyReply {
  const tail = `,"attributionToken":${JSON.stringify(attributionToken)}}`;
  const size = answer.head.length + Buffer.byteLength(tail);
  const buffer = take(size);
  answer.head.copy(buffer);
  buffer.write(tail, answer.head.length, 'utf8');
  // 'finish': the bytes are with the kernel; a response that never finishes (the client went away) leaves its
  // buffer to the garbage collector
  reply.raw.once('finish', () => give(buffer));
  return reply.type('application/json; charset=utf-8').send(buffer.subarray(0, size) as never);
}
