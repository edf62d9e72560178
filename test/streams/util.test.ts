// The processors' small shared helpers (streams/runtime/util.ts) against their plain definitions.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { chTime } from '../../streams/runtime/util.ts';

const RUNS = Number(process.env.PROPERTY_RUNS ?? 300);

describe('chTime', () => {
  it("writes every timestamp as the general rewrite does, toISOString's shape by slicing", () => {
    const general = (iso: string) => iso.replace('T', ' ').replace(/Z$/, '');
    const iso = fc.date({ noInvalidDate: true }).map((d) => d.toISOString());
    // toISOString's length with a T and a Z in other places, or more than one T
    const shaped = fc
      .tuple(fc.string({ minLength: 24, maxLength: 24 }), fc.nat({ max: 23 }), fc.nat({ max: 23 }))
      .map(([s, t, z]) => {
        const c = [...s.padEnd(24, '0').slice(0, 24)];
        c[t] = 'T';
        c[z] = 'Z';
        return c.join('');
      });
    fc.assert(
      fc.property(fc.oneof(iso, shaped, fc.string({ maxLength: 30 })), (v) => {
        expect(chTime(v), v).toBe(general(v));
      }),
      { numRuns: RUNS * 10 },
    );
    expect(chTime('2026-12-01T21:24:44.123Z')).toBe('2026-12-01 21:24:44.123');
    expect(chTime('T026-12-01T21:24:44.123Z')).toBe(' 026-12-01T21:24:44.123');
  });
});
