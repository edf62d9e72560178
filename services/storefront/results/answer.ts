// A computed product answer (browse, search, blocks, similar products) as the results cache holds it:
// `<meta JSON>\n<envelope JSON>` — what the request event and the headers need, then the response envelope
// serialized once without its attributionToken (per request). Decoded once per in-process cache entry (the
// meta parsed, the envelope kept as the string sent), so a HIT parses nothing; the request's token is
// appended to the envelope. The body goes out as a string: Node writes a string body and the response
// head in one write, where a Buffer body costs a concat or a second write (measured slower on the HIT path).
import type { FastifyReply } from 'fastify';

export interface Answer<M> {
  meta: M;
  /** the envelope's JSON up to, not including, its closing brace */
  head: string;
}

export function encodeAnswer(meta: unknown, envelope: unknown): string {
  return `${JSON.stringify(meta)}\n${JSON.stringify(envelope)}`;
}

export function decodeAnswer<M>(raw: string): Answer<M> {
  const nl = raw.indexOf('\n');
  return { meta: JSON.parse(raw.slice(0, nl)) as M, head: raw.slice(nl + 1, -1) };
}

/** the answer's envelope with this request's attributionToken, as JSON */
export function sendAnswer(reply: FastifyReply, answer: Answer<unknown>, attributionToken: string): FastifyReply {
  return reply
    .type('application/json; charset=utf-8')
    .send(`${answer.head},"attributionToken":${JSON.stringify(attributionToken)}}` as never);
}
