// Remembered records (services/storefront/results/rendered.ts) and the answer encoder that splices their
// JSON into the envelope (results/answer.ts encodeAnswer): the bytes are JSON.stringify's, whatever the
// envelope, and a record shown again is the same object, rendered once.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeAnswer } from '../../services/storefront/results/answer.ts';
import {
  clearRendered,
  RENDERED_MAX_CHARS,
  renderContext,
  renderedRecord,
} from '../../services/storefront/results/rendered.ts';
import type { Tile } from '../../services/storefront/results/tiles.ts';

const reference = (meta: unknown, envelope: unknown) => `${JSON.stringify(meta)}\n${JSON.stringify(envelope)}`;

describe('rendered records and the answer encoder', () => {
  it('writes the bytes JSON.stringify writes, for any envelope (property)', () => {
    const record = fc.dictionary(fc.string(), fc.jsonValue());
    fc.assert(
      fc.property(
        fc.array(fc.oneof(record, fc.jsonValue()), { maxLength: 8 }),
        fc.dictionary(
          fc.string().filter((k) => k !== 'results'),
          fc.jsonValue(),
        ),
        fc.boolean(),
        fc.jsonValue(),
        (results, rest, resultsFirst, meta) => {
          // the same record objects again, as remembered records come back in later answers
          const envelope = resultsFirst ? { results, ...rest } : { ...rest, results };
          expect(encodeAnswer(meta, envelope)).toBe(reference(meta, envelope));
          expect(encodeAnswer(meta, { results: [...results, ...results], ...rest })).toBe(
            reference(meta, { results: [...results, ...results], ...rest }),
          );
        },
      ),
      { numRuns: 300 },
    );
    for (const envelope of [
      { results: [] },
      { results: [undefined, null, 'x', { a: undefined }] },
      { page: 1 },
      null,
      [],
    ])
      expect(encodeAnswer({ m: 1 }, envelope)).toBe(reference({ m: 1 }, envelope));
  });

  it('renders a record once per tile and context, and again for another context, product or breakout', () => {
    clearRendered();
    let renders = 0;
    // a tile's variants follow from its product and breakout (tilesOf): the key does not list them
    const tile = (productId: string, breakout: Tile['breakout'] = null): Tile =>
      ({ item: { p: { id: productId } }, variants: [], breakout, position: 1 }) as unknown as Tile;
    const render = () => {
      renders++;
      return { id: 42, n: renders } as never;
    };
    const a = renderContext(['store', 1, 1, null, 'iso']);
    expect(renderContext(['store', 1, 1, null, 'iso'])).toBe(a);
    const first = renderedRecord(a, tile('42'), render);
    expect(renderedRecord(a, tile('42'), render)).toBe(first);
    expect(renders).toBe(1);
    // another catalog version, product or breakout value: another record
    renderedRecord(renderContext(['store', 2, 1, null, 'iso']), tile('42'), render);
    renderedRecord(a, tile('43'), render);
    const red = { id: 'b1', name: 'Color', optionCode: 'color', value: 'red', valueInTitle: true };
    renderedRecord(a, tile('42', red), render);
    renderedRecord(a, tile('42', { ...red, value: 'blue' }), render);
    expect(renders).toBe(5);
    // bounded by the records' JSON
    const big = () => ({ id: 1, text: 'x'.repeat(64 * 1024) }) as never;
    renderedRecord(a, tile('42'), render); // used recently: stays while there is room
    for (let i = 0; i < RENDERED_MAX_CHARS / (64 * 1024) - 2; i++) renderedRecord(a, tile(String(1000 + i)), big);
    expect(renderedRecord(a, tile('42'), render)).toBe(first);
    expect(renderedRecord(a, tile('1000'), render)).not.toHaveProperty('n');
    renderedRecord(a, tile('4999'), big); // the last that fits
    // full: a record asked for once pushes nothing out; asked for again, it does, the least recently used first
    const once = renderedRecord(a, tile('5000'), big);
    const twice = renderedRecord(a, tile('5000'), big);
    expect(twice).not.toBe(once);
    expect(renderedRecord(a, tile('5000'), big)).toBe(twice);
    expect(renderedRecord(a, tile('1000'), render)).not.toHaveProperty('n');
    expect(renderedRecord(a, tile('1001'), render)).toHaveProperty('n');
    clearRendered();
  });

  it('keeps a stable part of records that cycle over more than it holds, and takes new ones in as they are asked for', () => {
    clearRendered();
    const tile = (productId: string): Tile =>
      ({ item: { p: { id: productId } }, variants: [], breakout: null, position: 1 }) as unknown as Tile;
    let renders = 0;
    const big = () => {
      renders++;
      return { id: 1, text: 'x'.repeat(64 * 1024) } as never;
    };
    const fits = RENDERED_MAX_CHARS / (64 * 1024);
    const cycle = Math.round(fits * 1.5);
    // the same records asked for in the same order, round after round: least-recently-used alone would
    // render every one of them every round (each is evicted before it comes back)
    const round = (context: string) => {
      const before = renders;
      for (let i = 0; i < cycle; i++) renderedRecord(context, tile(String(i)), big);
      return renders - before;
    };
    const a = renderContext(['store', 'cycle', 1]);
    expect(round(a)).toBe(cycle);
    for (let r = 0; r < 4; r++) expect(round(a)).toBeLessThanOrEqual(cycle - fits + 1);
    // the catalog changes (a new context: new keys): records asked for under it take the place of the old
    const b = renderContext(['store', 'cycle', 2]);
    for (let k = 0; k < 12; k++) for (let i = 0; i < 10; i++) renderedRecord(b, tile(String(i)), big);
    const before = renders;
    for (let i = 0; i < 10; i++) renderedRecord(b, tile(String(i)), big);
    expect(renders).toBe(before);
    clearRendered();
  });

  it('lets popularity fade: records asked for often before a change give way to those asked for after it', () => {
    clearRendered();
    const tile = (productId: string): Tile =>
      ({ item: { p: { id: productId } }, variants: [], breakout: null, position: 1 }) as unknown as Tile;
    // eight records fill the budget; one object for all of them (its JSON is made once)
    const eighth = { id: 1, text: 'x'.repeat(RENDERED_MAX_CHARS / 8 - 20) } as never;
    let renders = 0;
    const render = () => {
      renders++;
      return eighth;
    };
    const a = renderContext(['store', 'fade', 1]);
    for (let k = 0; k < 20; k++) for (let i = 0; i < 8; i++) renderedRecord(a, tile(String(i)), render);
    expect(renders).toBe(8);
    // under a new context, eight others are asked for again and again: they are taken in once the old
    // counts have been halved (every SAMPLE requests), not never
    const b = renderContext(['store', 'fade', 2]);
    let passes = 0;
    for (let before = -1; before !== renders && passes < 100_000; passes++) {
      before = renders;
      for (let i = 0; i < 8; i++) renderedRecord(b, tile(String(i)), render);
    }
    expect(passes).toBeLessThan(100_000);
    expect(passes).toBeGreaterThan(1_000);
    clearRendered();
  });
});
