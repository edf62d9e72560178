// The one evaluator of condition groups (`filter_group` on products, and the request conditions of
// merchandising rules, pins and banners): the shape is schemas/config.ts ConditionGroup, the operators
// those of the reference notes (§1). A property has a list of values (tags, option values of several
// variants, …); a positive operator matches when any value satisfies it, its negation when none does:
//
//   eq / neq                one operand; exact (case-sensitive) equality, numbers compared as numbers
//   in / notIn              any value equals one of the operands
//   gt gte lt lte           one numeric operand (numeric values only)
//   between / notBetween    two operands, inclusive
//   contains, beginsWith, endsWith and their negations: case-insensitive text tests
//   null / notNull          no value (missing, null or '') / some value
import type { ConditionGroup } from '../../../schemas/config.ts';

export type Primitive = string | number | boolean;
type Leaf = { property: string; operator: string; values: Primitive[] };

const asNumber = (v: Primitive): number | null => {
  if (typeof v === 'number') return Number.isFinite(v) ? v : null;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (v.trim() === '') return null;
  const n = Number(v);
  return Number.isFinite(n) ? n : null;
};

function equal(a: Primitive, b: Primitive): boolean {
  if (typeof a === 'number' || typeof b === 'number') {
    const x = asNumber(a);
    const y = asNumber(b);
    return x !== null && x === y;
  }
  return String(a) === String(b);
}

const lower = (v: Primitive) => String(v).toLowerCase();

/** whether a list of values satisfies a positive operator */
function test(values: readonly Primitive[], op: string, operands: readonly Primitive[]): boolean {
  switch (op) {
    case 'eq':
      return values.some((v) => equal(v, operands[0]));
    case 'in':
      return values.some((v) => operands.some((o) => equal(v, o)));
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte': {
      const o = asNumber(operands[0]);
      if (o === null) return false;
      return values.some((v) => {
        const n = asNumber(v);
        if (n === null) return false;
        return op === 'gt' ? n > o : op === 'gte' ? n >= o : op === 'lt' ? n < o : n <= o;
      });
    }
    case 'between': {
      const a = asNumber(operands[0]);
      const b = asNumber(operands[1]);
      if (a === null || b === null) return false;
      const [lo, hi] = a <= b ? [a, b] : [b, a];
      return values.some((v) => {
        const n = asNumber(v);
        return n !== null && n >= lo && n <= hi;
      });
    }
    case 'contains':
      return values.some((v) => lower(v).includes(lower(operands[0])));
    case 'beginsWith':
      return values.some((v) => lower(v).startsWith(lower(operands[0])));
    case 'endsWith':
      return values.some((v) => lower(v).endsWith(lower(operands[0])));
    case 'notNull':
      return values.some((v) => v !== '');
    default:
      return false;
  }
}

const NEGATION: Record<string, string> = {
  neq: 'eq',
  notIn: 'in',
  notBetween: 'between',
  doesNotContain: 'contains',
  doesNotBeginWith: 'beginsWith',
  doesNotEndWith: 'endsWith',
  null: 'notNull',
};

export function matchLeaf(values: readonly Primitive[], operator: string, operands: readonly Primitive[]): boolean {
  const positive = NEGATION[operator];
  return positive ? !test(values, positive, operands) : test(values, operator, operands);
}

/** A compiled condition: one call per subject. */
export type Predicate<S> = (subject: S) => boolean;

/**
 * Compile a group against a value accessor. `accessor(property)` returns the function giving a subject's
 * values of that property, or a string (the reason) when the property is unknown; `onUnknown` decides what
 * an unknown property does (throw a 422, or never match).
 */
export function compileGroup<S>(
  group: ConditionGroup,
  accessor: (property: string) => ((subject: S) => readonly Primitive[]) | string,
  onUnknown: (path: (string | number)[], reason: string) => void,
): Predicate<S> {
  const leaf = (l: Leaf, path: (string | number)[]): Predicate<S> => {
    const get = accessor(l.property);
    if (typeof get === 'string') {
      onUnknown([...path, 'property'], get);
      return () => false;
    }
    const { operator, values } = l;
    return (s) => matchLeaf(get(s), operator, values);
  };
  const combine = (conditional: 'AND' | 'OR', parts: Predicate<S>[]): Predicate<S> =>
    conditional === 'AND' ? (s) => parts.every((p) => p(s)) : (s) => parts.some((p) => p(s));
  const parts = group.expressions.map((e, i) =>
    'expressions' in e
      ? combine(
          e.conditional,
          e.expressions.map((l, j) => leaf(l, ['expressions', i, 'expressions', j])),
        )
      : leaf(e, ['expressions', i]),
  );
  return combine(group.conditional, parts);
}
