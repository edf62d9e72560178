import { decodeTime } from 'ulid';
import { describe, expect, it } from 'vitest';
import { monotonicUlids, newUlid } from '../../services/common/ids.ts';

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const ULID = /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/;

describe('minted ids', () => {
  it('are ULIDs of the current time, all distinct', () => {
    const before = Date.now();
    const ids = Array.from({ length: 20_000 }, newUlid);
    const after = Date.now();
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of [ids[0], ids[9_999], ids[19_999]]) {
      expect(id).toMatch(ULID);
      expect(decodeTime(id)).toBeGreaterThanOrEqual(before);
      expect(decodeTime(id)).toBeLessThanOrEqual(after);
    }
    expect(ids.every((id) => ULID.test(id))).toBe(true);
  });

  it('draw every random character uniformly from the 32 symbols', () => {
    // 64 000 ids: each of the 16 random positions expects 2 000 of each symbol; a chi-square over 31
    // degrees of freedom is above 70 with probability < 1e-4, so a biased draw (a byte scaled by 255, a
    // pool refilled late, a position reused) fails and a fair one passes
    const n = 64_000;
    const counts = Array.from({ length: 16 }, () => new Array<number>(32).fill(0));
    for (let i = 0; i < n; i++) {
      const id = newUlid();
      for (let p = 0; p < 16; p++) counts[p][CROCKFORD.indexOf(id[10 + p])]++;
    }
    const expected = n / 32;
    const chi = counts.map((row) => row.reduce((s, c) => s + (c - expected) ** 2 / expected, 0));
    expect(Math.max(...chi)).toBeLessThan(70);
    // adjacent positions are independent: the same symbol twice in a row 1/32 of the time
    let same = 0;
    for (let i = 0; i < 20_000; i++) {
      const r = newUlid().slice(10);
      for (let p = 1; p < 16; p++) if (r[p] === r[p - 1]) same++;
    }
    expect(same / (20_000 * 15)).toBeCloseTo(1 / 32, 2);
  });

  it('from a monotonic generator sort in the order generated within one millisecond', () => {
    const next = monotonicUlids();
    const ids = Array.from({ length: 5_000 }, next);
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.every((id) => ULID.test(id))).toBe(true);
  });
});
