// The session state machine (streams/events/sessions.ts) against its rules as stated in that file's
// header, written out directly: over random sequences of views, clicks and searches of one session id
// (with gaps long enough to start new sessions), the co-view and searched-then-viewed emissions, in
// order, are those of the rules.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { EnrichedEvent } from '../../schemas/events.ts';
import {
  applyEvent,
  EMITTED_SV_MAX,
  newSession,
  PAIR_WINDOW,
  QUERY_WINDOW,
  SESSION_GAP_MS,
  type SessionOutputs,
} from '../../streams/events/sessions.ts';

type Step = { type: 'product_view' | 'product_click' | 'search'; item: number; gapMs: number };

/** the rules: recent lists with the newest last, each pair of searched-then-viewed once per session
 *  (among the last EMITTED_SV_MAX pairs emitted) */
function byTheRules(steps: Step[], start: number) {
  const coView: string[] = [];
  const searchedViewed: string[] = [];
  let views: string[] = [];
  let queries: string[] = [];
  let emitted: string[] = [];
  let t = start;
  let last = Number.NEGATIVE_INFINITY;
  const touch = (list: string[], x: string, max: number) => {
    const out = list.filter((y) => y !== x);
    out.push(x);
    return out.slice(-max);
  };
  for (const s of steps) {
    t += s.gapMs;
    if (t - last > SESSION_GAP_MS) {
      views = [];
      queries = [];
      emitted = [];
    }
    last = t;
    const day = new Date(t).toISOString().slice(0, 10);
    if (s.type === 'search') {
      queries = touch(queries, `query ${s.item}`, QUERY_WINDOW);
      continue;
    }
    const pid = String(1000 + s.item);
    if (s.type === 'product_view') {
      if (!views.includes(pid)) {
        coView.push(`${pid}>${pid}@${day}`);
        for (const v of views) coView.push(`${pid}>${v}@${day}`, `${v}>${pid}@${day}`);
      }
      views = touch(views, pid, PAIR_WINDOW);
    }
    for (const q of queries)
      if (!emitted.includes(`${q}|${pid}`)) {
        emitted = [...emitted, `${q}|${pid}`].slice(-EMITTED_SV_MAX);
        searchedViewed.push(`${q}>${pid}@${day}`);
      }
  }
  return { coView, searchedViewed };
}

function byTheStateMachine(steps: Step[], start: number) {
  const coView: string[] = [];
  const searchedViewed: string[] = [];
  const out: SessionOutputs = {
    sessions: () => {},
    coView: (a, b, day) => coView.push(`${a}>${b}@${day}`),
    coCart: () => {},
    searchedViewed: (q, p, day) => searchedViewed.push(`${q}>${p}@${day}`),
    searchedCarted: () => {},
    viewedBought: () => {},
    searchedPurchased: () => {},
  };
  const state = newSession();
  let t = start;
  steps.forEach((s, i) => {
    t += s.gapMs;
    const event = {
      event_type: s.type,
      timestamp: new Date(t).toISOString(),
      product_id: s.type === 'search' ? null : String(1000 + s.item),
      query: s.type === 'search' ? `query ${s.item}` : null,
      line_items: [],
      geo_country: 'DE',
    } as unknown as EnrichedEvent;
    applyEvent(state, event, 0, BigInt(i), out);
  });
  return { coView, searchedViewed };
}

describe('session state machine', () => {
  it('emits the co-view and searched-then-viewed pairs its rules state, in order (property)', () => {
    const step = fc.record({
      type: fc.constantFrom<Step['type']>('product_view', 'product_view', 'product_click', 'search'),
      // more products than the pair window, more queries than the query window
      item: fc.integer({ min: 0, max: 2 * PAIR_WINDOW }),
      // mostly within a session, now and then a gap that starts a new one
      gapMs: fc.oneof(
        { arbitrary: fc.integer({ min: 0, max: 120_000 }), weight: 60 },
        { arbitrary: fc.constant(SESSION_GAP_MS + 1), weight: 1 },
      ),
    });
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 600, size: 'max' }), (steps) => {
        const start = Date.UTC(2026, 11, 3, 23, 0); // sessions that cross a UTC day
        expect(byTheStateMachine(steps, start)).toEqual(byTheRules(steps, start));
      }),
      { numRuns: 100 },
    );
  });
});
