// A chunk whose work outlasts the group's session timeout (the image processors fetching a catalog's
// images, a large backlog's inserts on a busy engine): the runtime keeps the consumer's membership alive
// while the chunk is worked on, so the group does not expire the member, refuse its commit and hand the
// chunk to the next member to do again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventsProcessor } from '../../streams/events/processor.ts';
import type { Processor } from '../../streams/runtime/types.ts';
import type { EnrichedEvent } from '../../schemas/events.ts';
import { enrichedEvent, produce, type StreamsHarness, startStreamsHarness, waitCaughtUp } from './helpers.ts';

const SESSION_TIMEOUT_MS = 6_000; // the least the configuration allows (as Kafka's group.min.session.timeout.ms)
const STORE = 'store-long-chunks';

describe('a chunk that takes longer than the session timeout', () => {
  let h: StreamsHarness;
  /** the first offset of every chunk the processor was given, in order */
  const chunks: bigint[] = [];
  /** the events processor, slowed to twice the session timeout on its first chunk */
  const slow: Processor<EnrichedEvent> = {
    ...eventsProcessor,
    async process(batch, ctx) {
      chunks.push(batch[0].position.offset);
      if (chunks.length === 1) await new Promise((r) => setTimeout(r, 2 * SESSION_TIMEOUT_MS));
      return eventsProcessor.process(batch, ctx);
    },
  };
  beforeAll(async () => {
    h = await startStreamsHarness('long-chunks', {
      processors: [slow],
      env: { STREAMS_SESSION_TIMEOUT_MS: String(SESSION_TIMEOUT_MS) },
    });
  }, 120_000);
  afterAll(async () => {
    await h?.stop();
  }, 60_000);

  it('is processed and committed once, by the member that began it', { timeout: 60_000 }, async () => {
    const events = Array.from({ length: 5 }, (_, i) => ({
      key: `${STORE}:s-1`,
      value: enrichedEvent({
        event_type: 'product_view',
        store_id: STORE,
        session_id: 's-1',
        timestamp: new Date(Date.now() - 10_000 + i).toISOString(),
        product_id: String(100 + i),
      }),
    }));
    await produce(h.infra, 'events', events);
    await waitCaughtUp(h.infra.kafka, [{ group: 'streams.events', topic: h.infra.topic('events') }], 40_000);
    // one chunk, given once: no expired member, no refused commit, no second attempt
    expect(chunks).toEqual([0n]);
    const [row] = await h.db.query<{ n: string }>('SELECT count() AS n FROM events_raw WHERE store_id = {s:String}', {
      s: STORE,
    });
    expect(Number(row.n)).toBe(events.length);
  });
});
