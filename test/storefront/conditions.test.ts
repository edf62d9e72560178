// The one condition evaluator (filter_group, merchandising conditions): operator semantics over
// multi-valued properties, negations as "no value matches", nesting, and the attribute selector grammar.
import { describe, expect, it } from 'vitest';
import { compileGroup, matchLeaf } from '../../services/storefront/results/conditions.ts';
import { parseAttributes } from '../../services/storefront/results/render.ts';
import { FilterGroupSchema } from '../../schemas/storefront.ts';
import { zodFields } from '../../services/storefront/errors.ts';

describe('condition operators', () => {
  it('match when any value satisfies a positive operator and when none satisfies a negated one', () => {
    const tags = ['summer', 'Sale', 'linen'];
    expect(matchLeaf(tags, 'eq', ['linen'])).toBe(true);
    expect(matchLeaf(tags, 'eq', ['sale'])).toBe(false); // equality is case-sensitive
    expect(matchLeaf(tags, 'neq', ['linen'])).toBe(false);
    expect(matchLeaf(tags, 'in', ['x', 'summer'])).toBe(true);
    expect(matchLeaf(tags, 'notIn', ['x', 'y'])).toBe(true);
    expect(matchLeaf(tags, 'contains', ['SAL'])).toBe(true); // text tests are case-insensitive
    expect(matchLeaf(tags, 'doesNotContain', ['lin'])).toBe(false);
    expect(matchLeaf(tags, 'beginsWith', ['sum'])).toBe(true);
    expect(matchLeaf(tags, 'endsWith', ['EN'])).toBe(true);
    expect(matchLeaf(tags, 'doesNotBeginWith', ['x'])).toBe(true);
    expect(matchLeaf(tags, 'doesNotEndWith', ['mer'])).toBe(false);
  });

  it('compares numbers numerically (numeric strings too) and ranges inclusively', () => {
    const prices = [19.9, 35];
    expect(matchLeaf(prices, 'lt', [20])).toBe(true);
    expect(matchLeaf(prices, 'gt', ['34.99'])).toBe(true);
    expect(matchLeaf(prices, 'gte', [36])).toBe(false);
    expect(matchLeaf(prices, 'lte', [19.9])).toBe(true);
    expect(matchLeaf(prices, 'between', [35, 20])).toBe(true);
    expect(matchLeaf(prices, 'notBetween', [20, 34])).toBe(true);
    expect(matchLeaf(['abc'], 'gt', [1])).toBe(false);
    expect(matchLeaf([5], 'eq', ['5'])).toBe(true);
  });

  it('treats missing and empty values as null', () => {
    expect(matchLeaf([], 'null', [])).toBe(true);
    expect(matchLeaf([''], 'null', [])).toBe(true);
    expect(matchLeaf(['x'], 'notNull', [])).toBe(true);
    expect(matchLeaf([], 'eq', ['x'])).toBe(false);
    expect(matchLeaf([], 'neq', ['x'])).toBe(true);
  });

  it('combines AND and OR groups two levels deep and reports unknown properties with their path', () => {
    const group = FilterGroupSchema.parse({
      conditional: 'AND',
      expressions: [
        { property: 'price', operator: 'lt', values: [50] },
        {
          conditional: 'OR',
          expressions: [
            { property: 'vendor', operator: 'eq', values: ['A'] },
            { property: 'colour', operator: 'eq', values: ['red'] },
          ],
        },
      ],
    });
    const unknown: string[] = [];
    type S = Record<string, (string | number)[]>;
    const pred = compileGroup<S>(
      group,
      (p) => (p === 'colour' ? 'unknown property' : (s: S) => s[p] ?? []),
      (path) => unknown.push(path.join('.')),
    );
    expect(unknown).toEqual(['expressions.1.expressions.1.property']);
    expect(pred({ price: [20], vendor: ['A'] })).toBe(true);
    expect(pred({ price: [60], vendor: ['A'] })).toBe(false);
    expect(pred({ price: [20], vendor: ['B'] })).toBe(false);
  });

  it('refuses a wrong number of values for an operator, a third nesting level and unknown operators', () => {
    const r = FilterGroupSchema.safeParse({
      expressions: [
        { property: 'price', operator: 'between', values: [1] },
        { property: 'tags', operator: 'null', values: ['x'] },
        { property: 'tags', operator: 'like', values: ['x'] },
      ],
    });
    expect(r.success).toBe(false);
    // the storefront's 422 names the operator, not just the union entry
    expect(r.error && zodFields(r.error, 'filter_group').map((f) => f.path)).toContain(
      'filter_group.expressions[2].operator',
    );
    const deep = FilterGroupSchema.safeParse({
      expressions: [{ conditional: 'OR', expressions: [{ conditional: 'AND', expressions: [] }] }],
    });
    expect(deep.success).toBe(false);
    const arity = FilterGroupSchema.safeParse({
      expressions: [
        { property: 'price', operator: 'between', values: [1] },
        { property: 'tags', operator: 'null', values: ['x'] },
      ],
    });
    expect(arity.error?.issues.map((i) => i.path.join('.'))).toEqual(['expressions.0.values', 'expressions.1.values']);
  });
});

describe('attribute selection', () => {
  it('parses roots, slices, item filters and fields, merging selections of one root', () => {
    const p = parseAttributes([
      'id',
      'images[:2].src',
      'images.alt',
      'variants[sku=AB-1].price',
      'metafields[namespace=custom]',
    ]);
    expect(p.get('id')).toMatchObject({ all: true });
    expect(p.get('images')).toMatchObject({ all: false, slice: [0, 2], fields: new Set(['src', 'alt']) });
    expect(p.get('variants')).toMatchObject({ where: [{ field: 'sku', value: 'AB-1' }], fields: new Set(['price']) });
    expect(p.get('metafields')).toMatchObject({ all: true, where: [{ field: 'namespace', value: 'custom' }] });
    expect(p.has('collection_titles')).toBe(false);
    expect(parseAttributes(undefined).has('collection_titles')).toBe(false);
    expect(parseAttributes(['collection_titles']).has('collection_titles')).toBe(true);
  });

  it('refuses unknown attributes and malformed selectors, naming the entry', () => {
    expect(() => parseAttributes(['id', 'colour'])).toThrow(expect.objectContaining({ status: 422 }));
    try {
      parseAttributes(['images[x'], undefined);
    } catch (e) {
      expect((e as { fields: { path: string }[] }).fields[0].path).toBe('attributes[0]');
    }
  });
});
