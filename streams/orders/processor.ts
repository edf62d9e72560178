// The `orders` processor: commerce.orders.v1 → orders_raw, product_daily_sales and co_purchase_pairs.
//
// An order can be written again (edit, cancellation; "the latest record wins"), so order_id is not a
// duplicate key here. Instead the processor keeps each order's last applied contribution in Redis
// (units and revenue per product, the products that formed pairs, the day) with the log position it was
// applied at, and writes *signed deltas*: new contribution minus old. A cancelled order contributes
// nothing, so cancelling subtracts everything the order added; an identical re-send changes nothing.
// The state is saved after the writes and before the commit (same crash reasoning as sessions: a re-read
// chunk either sees the old state and reproduces the same rows and token, or sees the new state and
// skips the orders it already applied).
//
// An order Redis has no state for is either new or forgotten (a FLUSHALL, a fresh instance): its state is
// then rebuilt from what orders_raw holds of it before the chunk (the runtime's `ctx.ledgerRows`: the rows
// of its latest version — position, lines, cancelled — give the same contribution `contribution()` made
// of that record), so a re-send after a flush changes nothing, and an edit or a cancellation subtracts
// what the order had added.
import { type Order, OrderSchema } from '../../schemas/orders.ts';
import { RelatedProducts } from '../related/notify.ts';
import type { LedgerEntry } from '../runtime/ledger.ts';
import type { Decoded, ProcessContext, Processor, ProcessResult } from '../runtime/types.ts';
import { chTime, RowSummer, utcDay, zodParse } from '../runtime/util.ts';

export const ORDER_PAIR_WINDOW = 20;
/** orders can be cancelled months later: keep their contribution for 400 days */
const ORDER_STATE_TTL_S = 400 * 24 * 60 * 60;
const SCALE = 1_000_000n; // money as integer micro-units

export interface OrderContribution {
  day: string;
  /** product id → [units, revenue in micro-units as a decimal string] */
  items: Record<string, [number, string]>;
  /** first 20 distinct products with quantity > 0 (pairs among them) */
  paired: string[];
}

interface OrderState {
  p: number;
  o: string;
  lines: number;
  c: OrderContribution | null;
}

export function toMicros(decimal: string): bigint {
  const [int, frac = ''] = decimal.split('.');
  return BigInt(int) * SCALE + BigInt((frac + '000000').slice(0, 6));
}

export function fromMicros(v: bigint): string {
  const neg = v < 0n;
  const a = neg ? -v : v;
  return `${neg ? '-' : ''}${a / SCALE}.${(a % SCALE).toString().padStart(6, '0')}`;
}

export function contribution(o: Order): OrderContribution | null {
  if (o.cancelled) return null;
  const items: Record<string, [number, string]> = {};
  const paired: string[] = [];
  for (const li of o.line_items) {
    if (li.quantity <= 0) continue;
    const prev = items[li.product_id] ?? [0, '0'];
    items[li.product_id] = [
      prev[0] + li.quantity,
      (BigInt(prev[1]) + toMicros(li.price) * BigInt(li.quantity)).toString(),
    ];
    if (!paired.includes(li.product_id) && paired.length < ORDER_PAIR_WINDOW) paired.push(li.product_id);
  }
  return { day: utcDay(o.created_at), items, paired };
}

/** The state of an order as orders_raw holds its latest version (the rows of one log position). */
function stateFromLedger(o: Order, entry: LedgerEntry): OrderState {
  const rows = [...entry.rows].sort((a, b) => Number(a.line_no) - Number(b.line_no));
  const cancelled = rows.some((r) => r.cancelled === '1');
  // the version's own lines; the ones it removed (is_deleted, at the end) contribute nothing
  const line_items = rows
    .filter((r) => r.is_deleted !== '1')
    .map((r) => ({ product_id: r.product_id, variant_id: null, quantity: Number(r.quantity), price: r.price }));
  const created_at = rows[0] ? `${rows[0].ts.replace(' ', 'T')}Z` : o.created_at;
  return {
    p: entry.partition,
    o: entry.offset.toString(),
    lines: rows.length ? Number(rows[rows.length - 1].line_no) + 1 : 0,
    c: contribution({ ...o, created_at, cancelled, line_items }),
  };
}

type SalesRow = { store_id: string; day: string; product_id: string; units: number; orders: number; revenue: bigint };
type PairRow = { store_id: string; product_a: string; product_b: string; day: string; orders: number };

function addContribution(
  store: string,
  c: OrderContribution | null,
  sign: 1 | -1,
  sales: RowSummer<SalesRow>,
  pairs: RowSummer<PairRow>,
) {
  if (!c) return;
  for (const [pid, [units, micros]] of Object.entries(c.items)) {
    sales.add(`${store}|${c.day}|${pid}`, {
      store_id: store,
      day: c.day,
      product_id: pid,
      units: sign * units,
      orders: sign,
      revenue: BigInt(sign) * BigInt(micros),
    });
  }
  for (const a of c.paired) {
    for (const b of c.paired) {
      pairs.add(`${store}|${a}|${b}|${c.day}`, {
        store_id: store,
        product_a: a,
        product_b: b,
        day: c.day,
        orders: sign,
      });
    }
  }
}

export const ordersProcessor: Processor<Order> = {
  name: 'orders',
  topic: 'orders',
  tables: {
    written: ['orders_raw', 'product_daily_sales', 'co_purchase_pairs'],
    views: [],
    compare: {
      orders_raw: { day: 'ts', measure: 'count()' },
      product_daily_sales: { day: 'day', measure: 'sum(units)' },
      co_purchase_pairs: { day: 'day', measure: 'sum(orders)' },
    },
  },
  parse: (value) => zodParse(OrderSchema, value),
  // every version of an order, line by line, with its log position; `ts` is created_at (one per order)
  ledger: {
    table: 'orders_raw',
    idColumn: 'order_id',
    timeColumn: 'ts',
    columns: ['line_no', 'product_id', 'quantity', 'price', 'cancelled', 'is_deleted', 'ts'],
  },
  async process(batch: Decoded<Order>[], ctx: ProcessContext): Promise<ProcessResult> {
    const keyOf = (o: Order) => ctx.stateKey('o', o.store_id, o.order_id);
    const firstOf = new Map<string, Order>();
    for (const d of batch) if (!firstOf.has(keyOf(d.value))) firstOf.set(keyOf(d.value), d.value);
    const keys = [...firstOf.keys()];
    const loaded = keys.length ? await ctx.redis.mget(...keys) : [];
    const states = new Map<string, OrderState>();
    const unknown: Order[] = [];
    keys.forEach((k, i) => {
      const v = loaded[i];
      if (v) states.set(k, JSON.parse(v) as OrderState);
      else unknown.push(firstOf.get(k) as Order);
    });
    // no state in Redis: new, or forgotten — then orders_raw knows what the order contributed
    const known =
      unknown.length && ctx.ledgerRows
        ? await ctx.ledgerRows(unknown.map((o) => ({ store_id: o.store_id, id: o.order_id, time: o.created_at })))
        : new Map<string, LedgerEntry>();
    for (const o of unknown) {
      const entry = known.get(`${o.store_id}:${o.order_id}`);
      states.set(keyOf(o), entry ? stateFromLedger(o, entry) : { p: -1, o: '-1', lines: 0, c: null });
    }
    const changed = new Set<string>();
    // signed sums: the summer adds `revenue` as bigint through the numeric fields
    const sales = new RowSummer<SalesRow>(['units', 'orders', 'revenue']);
    const pairs = new RowSummer<PairRow>(['orders']);
    const raw: object[] = [];

    for (const d of batch) {
      const o = d.value;
      const key = keyOf(o);
      const s = states.get(key) as OrderState;
      if (s.p === d.position.partition && BigInt(s.o) >= d.position.offset) continue; // already applied
      const next = contribution(o);
      if (JSON.stringify(next) !== JSON.stringify(s.c)) {
        addContribution(o.store_id, s.c, -1, sales, pairs);
        addContribution(o.store_id, next, 1, sales, pairs);
      }
      const version = d.position.offset.toString();
      o.line_items.forEach((li, i) => {
        raw.push({
          store_id: o.store_id,
          ts: chTime(o.created_at),
          updated_at: o.updated_at === null ? null : chTime(o.updated_at),
          order_id: o.order_id,
          line_no: i,
          product_id: li.product_id,
          variant_id: li.variant_id,
          quantity: li.quantity,
          price: li.price,
          line_total: fromMicros(toMicros(li.price) * BigInt(li.quantity)),
          total_price: o.total_price,
          currency: o.currency,
          customer_id: o.customer_id,
          session_id: o.session_id ?? '',
          cancelled: o.cancelled ? 1 : 0,
          source: o.source,
          is_deleted: o.cancelled ? 1 : 0,
          _version: version,
          _partition: d.position.partition,
          _offset: version,
        });
      });
      // lines that disappeared in an edit
      for (let i = o.line_items.length; i < s.lines; i++) {
        raw.push({
          store_id: o.store_id,
          ts: chTime(o.created_at),
          updated_at: o.updated_at === null ? null : chTime(o.updated_at),
          order_id: o.order_id,
          line_no: i,
          product_id: 0,
          variant_id: null,
          quantity: 0,
          price: '0',
          line_total: '0',
          total_price: o.total_price,
          currency: o.currency,
          customer_id: o.customer_id,
          session_id: o.session_id ?? '',
          cancelled: o.cancelled ? 1 : 0,
          source: o.source,
          is_deleted: 1,
          _version: version,
          _partition: d.position.partition,
          _offset: version,
        });
      }
      states.set(key, { p: d.position.partition, o: version, lines: Math.max(s.lines, o.line_items.length), c: next });
      changed.add(key);
    }

    const salesRows = sales
      .values()
      .filter((r) => r.units !== 0 || r.orders !== 0 || r.revenue !== 0n)
      .map((r) => ({ ...r, revenue: fromMicros(r.revenue) }));
    const pairRows = pairs.values().filter((r) => r.orders !== 0);
    const related = new RelatedProducts();
    for (const r of pairRows) related.add(r.store_id, r.product_a);
    return {
      writes: [
        { table: 'orders_raw', rows: raw },
        { table: 'product_daily_sales', rows: salesRows },
        { table: 'co_purchase_pairs', rows: pairRows },
      ],
      afterWrite: async () => {
        await related.notify(ctx);
        if (changed.size === 0) return;
        const tx = ctx.redis.multi();
        for (const k of changed) tx.set(k, JSON.stringify(states.get(k)), 'EX', ORDER_STATE_TTL_S);
        await tx.exec();
      },
    };
  },
};
