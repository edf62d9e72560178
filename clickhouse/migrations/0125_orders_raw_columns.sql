-- orders_raw: the order fields that had no column (0102). Writer: the `orders` processor
-- (streams/orders/processor.ts). Grain: unchanged (one order line); both values are the order's own and
-- repeat on each of its lines — aggregate them per order (e.g. `any(total_price) … GROUP BY order_id`),
-- never summed over lines. NULL on rows written before this migration until a replay of the `orders`
-- processor rebuilds them from the log. The contract with the topic's Avro value: schemas/tables.ts.
--   updated_at    when the platform last changed the order, UTC
--   total_price   the order total in major units as the platform states it (shipping, taxes, discounts
--                 included), whereas line_total is quantity × unit price of one line
ALTER TABLE orders_raw
    ADD COLUMN IF NOT EXISTS updated_at Nullable(DateTime64(3, 'UTC')) AFTER ts,
    ADD COLUMN IF NOT EXISTS total_price Nullable(Decimal(18, 6)) AFTER line_total;
