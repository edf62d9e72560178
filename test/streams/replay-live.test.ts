// A replay of the events processor while shoppers keep sending events: what arrives during the replay
// (before, during and after its cut-over) is counted once in the swapped-in tables — events_raw, the
// sessions' co-view pairs — exactly as if no replay had run.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReplayEvent } from '../../streams/replay/replay.ts';
import { runReplay } from '../../streams/replay/replay.ts';
import { enrichedEvent, produce, type StreamsHarness, startStreamsHarness, waitCaughtUp } from './helpers.ts';
import { generateScenario } from './scenario.ts';

const STORE = 'replay_live';

/** one session viewing product a, then product b, a second later */
function session(i: number, a: number, b: number) {
  const session_id = `live-${i}`;
  const t = Date.now();
  return [a, b].map((product_id, k) => ({
    key: `${STORE}:${session_id}`,
    value: enrichedEvent({
      event_type: 'product_view',
      store_id: STORE,
      session_id,
      product_id: String(product_id),
      timestamp: new Date(t + k * 1000).toISOString(),
    }),
  }));
}

describe('replay while events keep arriving', () => {
  let harness: StreamsHarness;
  beforeAll(async () => {
    harness = await startStreamsHarness('replay-live', {
      env: { STREAMS_MAX_BATCH_MESSAGES: '200' },
      processors: 'events',
    });
  });
  afterAll(() => harness?.stop());

  it('counts every session that viewed A then B during the replay once, in the swapped-in tables', {
    timeout: 240_000,
  }, async () => {
    const { infra, db } = harness;
    // a history to replay (other stores), processed live first
    const sc = generateScenario({ seed: 11, stores: ['replay_hist'], visitsPerStore: 200, ordersPerStore: 0 });
    await produce(infra, 'events', sc.events);
    const groups = [{ group: 'streams.events', topic: infra.topic('events') }];
    await waitCaughtUp(infra.kafka, groups, 60_000);

    // sessions view 1 then 2 before, during and after the replay
    let n = 0;
    let producing = true;
    const producer = (async () => {
      while (producing) {
        await produce(infra, 'events', session(n++, 1, 2));
        await new Promise((r) => setTimeout(r, 25));
      }
    })();
    await new Promise((r) => setTimeout(r, 500));
    const events: ReplayEvent[] = [];
    const result = await runReplay(harness.replayEnv(), { processor: 'events', from: { kind: 'earliest' } }, (e) =>
      events.push(e),
    );
    expect(result.swapped).toBe(true);
    await new Promise((r) => setTimeout(r, 500));
    producing = false;
    await producer;
    await waitCaughtUp(infra.kafka, groups, 60_000);

    const [raw] = await db.query<{ n: string }>(
      `SELECT count() AS n FROM events_raw WHERE store_id = {s:String} AND event_type = 'product_view'`,
      { s: STORE },
    );
    const [pairs] = await db.query<{ ab: string; aa: string }>(
      `SELECT sumIf(sessions, product_a = 1 AND product_b = 2) AS ab, sumIf(sessions, product_a = 1 AND product_b = 1) AS aa
       FROM co_view_pairs WHERE store_id = {s:String}`,
      { s: STORE },
    );
    expect({ raw: Number(raw.n), ab: Number(pairs.ab), aa: Number(pairs.aa) }).toEqual({ raw: 2 * n, ab: n, aa: n });
  });
});
