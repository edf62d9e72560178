// POST /internal/replay: runs a replay inside the process that owns ClickHouse (single-node mode: chDB
// belongs to the app) and streams its progress as NDJSON (one ReplayEvent per line). Bearer-token
// protected (STREAMS_REPLAY_TOKEN, else a token generated into DATA_DIR/replay.token, mode 0600, which
// the CLI reads), compared in constant time.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Config } from '../../services/common/config.ts';
import type { Logger } from '../../services/common/logger.ts';
import type { Streams } from '../service.ts';
import {
  type ReplayEnv,
  type ReplayEvent,
  ReplayError,
  type ReplayFrom,
  type ReplayOptions,
  runReplay,
  validateReplay,
} from './replay.ts';

/** Runs one replay where the live processors are (this thread, or the processors' worker thread). */
export type ReplayRunner = (request: ReplayOptions, emit: (e: ReplayEvent) => void) => Promise<unknown>;

/** The ReplayRunner of processors running in this thread. */
export function localReplayRunner(
  env: Omit<ReplayEnv, 'streams' | 'deps' | 'runOptions'>,
  streams: Streams,
): ReplayRunner {
  return (request, emit) =>
    runReplay({ ...env, streams, deps: streams.deps, runOptions: streams.runOptions }, request, emit);
}

export function replayTokenPath(config: Pick<Config, 'dataDir'>): string {
  return path.join(config.dataDir, 'replay.token');
}

/** STREAMS_REPLAY_TOKEN, or the token in DATA_DIR/replay.token (created on first use). */
export function resolveReplayToken(config: Pick<Config, 'dataDir' | 'STREAMS_REPLAY_TOKEN'>): string {
  if (config.STREAMS_REPLAY_TOKEN) return config.STREAMS_REPLAY_TOKEN;
  const file = replayTokenPath(config);
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  mkdirSync(path.dirname(file), { recursive: true });
  const token = randomBytes(32).toString('hex');
  writeFileSync(file, `${token}\n`, { mode: 0o600, flag: 'wx' });
  return token;
}

function sameToken(given: string, expected: string): boolean {
  // hash first so the comparison is constant-time whatever the lengths
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

export const ReplayRequestSchema = z.object({
  processor: z.string().min(1).max(64),
  /** 'earliest', an ISO 8601 time, or partition offsets `p:o,p:o` */
  from: z.string().min(1).max(4096),
  swap: z.boolean().optional(),
  allowPartialSwap: z.boolean().optional(),
});

/** Parse `--from`: earliest | ISO time | `p:o,p:o…`. Throws a message naming the problem. */
export function parseFrom(from: string): ReplayFrom {
  const v = from.trim();
  if (v === 'earliest') return { kind: 'earliest' };
  if (/^\d+:\d+(,\d+:\d+)*$/.test(v)) {
    const offsets = new Map<number, bigint>();
    for (const pair of v.split(',')) {
      const [p, o] = pair.split(':');
      offsets.set(Number(p), BigInt(o));
    }
    return { kind: 'offsets', offsets };
  }
  const ms = Date.parse(v);
  if (/^\d{4}-\d\d-\d\d/.test(v) && Number.isFinite(ms)) return { kind: 'time', ms };
  throw new Error("expected 'earliest', an ISO 8601 time or partition offsets like 0:120,1:98");
}

export async function replayRoutes(
  app: FastifyInstance,
  opts: {
    token: string;
    /** undefined while the processors are still starting */
    runner: () => ReplayRunner | undefined;
    logger: Logger;
  },
) {
  app.post('/replay', { bodyLimit: 16 * 1024 }, async (req, reply) => {
    const auth = req.headers.authorization ?? '';
    const given = auth.startsWith('Bearer ') ? auth.slice(7) : '';
    if (!given || !sameToken(given, opts.token)) {
      return reply.code(401).send({
        error: { code: 'unauthorized', message: 'a valid bearer token is required (see DATA_DIR/replay.token)' },
      });
    }
    const parsed = ReplayRequestSchema.safeParse(req.body);
    if (!parsed.success) {
      return reply.code(422).send({
        error: {
          code: 'invalid_body',
          message: 'invalid replay request',
          fields: parsed.error.issues.map((i) => ({ path: i.path.map(String).join('.'), message: i.message })),
        },
      });
    }
    let from: ReplayFrom;
    try {
      from = parseFrom(parsed.data.from);
    } catch (err) {
      return reply.code(422).send({
        error: {
          code: 'invalid_body',
          message: (err as Error).message,
          fields: [{ path: 'from', message: (err as Error).message }],
        },
      });
    }
    const request = {
      processor: parsed.data.processor,
      from,
      swap: parsed.data.swap,
      allowPartialSwap: parsed.data.allowPartialSwap,
    };
    try {
      validateReplay(request);
    } catch (err) {
      const e = err as ReplayError;
      return reply.code(e.status ?? 422).send({
        error: {
          code: 'invalid_body',
          message: e.message,
          fields: e.field ? [{ path: e.field, message: e.message }] : [],
        },
      });
    }
    const run = opts.runner();
    if (!run)
      return reply
        .code(503)
        .header('retry-after', '5')
        .send({ error: { code: 'not_ready', message: 'stream processors are still starting' } });

    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, { 'content-type': 'application/x-ndjson; charset=utf-8', 'cache-control': 'no-store' });
    const emit = (e: ReplayEvent) => {
      if (!res.writableEnded) res.write(`${JSON.stringify(e)}\n`);
    };
    try {
      await run(request, emit);
    } catch (err) {
      const status = err instanceof ReplayError ? err.status : 500;
      if (status >= 500) opts.logger.error({ err }, 'replay failed');
      emit({ type: 'error', message: (err as Error).message });
    } finally {
      res.end();
    }
  });
}
