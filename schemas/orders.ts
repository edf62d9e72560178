// Orders: the value of `commerce.orders.v1`, produced from the commerce platform's order webhooks and
// bulk imports (services/catalog) and consumed by the revenue and co-purchase processors. An order that
// changes (cancellation, edit) is written again with the same order_id; the latest record wins.
import { z } from 'zod';
import {
  currency,
  decimal,
  decimalString,
  idString,
  intLike,
  isoUtc,
  numericId,
  optionalIdLike,
  optionalNumericId,
  timestamp,
} from './events.ts';

const OrderLineItemSchema = z
  .object({
    product_id: z.string().describe('numeric product id as a string'),
    variant_id: z.string().nullable(),
    quantity: z.int32().min(0),
    price: decimalString.describe('unit price in major units, decimal string'),
  })
  .meta({ id: 'OrderLineItem' });

export const OrderSchema = z.object({
  store_id: z.string(),
  order_id: z.string().describe('platform order id'),
  customer_id: z.string().nullable().describe('null for guest checkouts'),
  session_id: z.string().nullable().describe('storefront session id, when the order carries it (cart attributes)'),
  created_at: isoUtc.describe('when the order was placed, UTC'),
  updated_at: isoUtc.nullable().describe('when the platform last changed the order, UTC'),
  currency: z.string().describe('ISO 4217 code of the amounts'),
  total_price: decimalString.describe('order total in major units, decimal string'),
  line_items: z.array(OrderLineItemSchema),
  cancelled: z.boolean().describe('true once the order is cancelled; aggregates subtract it'),
  source: z.enum(['webhook', 'import', 'beacon']).describe('where the record came from'),
});
export type Order = z.infer<typeof OrderSchema>;
export type OrderLineItem = z.infer<typeof OrderLineItemSchema>;

/** An order as a producer hands it over (lenient about id and amount formats); normalizes to `Order`. */
export const OrderInputSchema = z.object({
  store_id: idString(64),
  order_id: z.union([idString(64), z.number().int().positive()]).transform(String),
  customer_id: optionalIdLike(128),
  session_id: optionalIdLike(128),
  created_at: timestamp,
  updated_at: z
    .unknown()
    .optional()
    .transform((raw, ctx): string | null => {
      if (raw === undefined || raw === null) return null;
      const r = timestamp.safeParse(raw);
      if (r.success) return r.data;
      ctx.addIssue({ code: 'custom', message: r.error.issues[0].message });
      return z.NEVER;
    }),
  currency,
  total_price: decimal,
  line_items: z
    .array(
      z.object({
        product_id: numericId,
        variant_id: optionalNumericId,
        quantity: intLike(0, 1_000_000),
        price: decimal,
      }),
    )
    .max(1000),
  cancelled: z.boolean().default(false),
  source: z.enum(['webhook', 'import', 'beacon']).default('webhook'),
});
export type OrderInput = z.input<typeof OrderInputSchema>;
