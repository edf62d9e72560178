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
    // bounded by the records' JSON: the least recently used goes first
    const big = () => ({ id: 1, text: 'x'.repeat(64 * 1024) }) as never;
    renderedRecord(a, tile('42'), render); // used recently: stays while there is room
    for (let i = 0; i < RENDERED_MAX_CHARS / (64 * 1024) - 2; i++) renderedRecord(a, tile(String(1000 + i)), big);
    expect(renderedRecord(a, tile('42'), render)).toBe(first);
    expect(renderedRecord(a, tile('1000'), render)).not.toHaveProperty('n');
    for (let i = 0; i < 4; i++) renderedRecord(a, tile(String(5000 + i)), big);
    // the oldest went first; '1000', used just before, stayed
    expect(renderedRecord(a, tile('1001'), render)).toHaveProperty('n');
    expect(renderedRecord(a, tile('1000'), render)).not.toHaveProperty('n');
    clearRendered();
  });
});
