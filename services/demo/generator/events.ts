// Simulated session steps → the engagement events a storefront would send to POST /beacon
// (schemas/events.ts). Pure, so tests validate every generated event against the beacon's own schemas.
import type { EventType } from '../../../schemas/events.ts';
import type { SimSession, SimStep } from './generator.ts';

/** An event as the client sends it (JSON); `parseEvent` in schemas/events.ts is what validates it. */
export type BeaconEventJson = {
  event_type: EventType;
  event_id: string;
  timestamp: string;
  session_id: string;
} & Record<string, unknown>;

/** The beacon event of a step; `attributionToken` is the request id of the search that led to it, when known. */
export function beaconEvent(
  s: SimSession,
  step: SimStep,
  replayStartMs: number,
  attributionToken: string | null = null,
): BeaconEventJson {
  const common = {
    event_id: step.eventId,
    timestamp: new Date(replayStartMs + step.t).toISOString(),
    session_id: s.sessionId,
    customer_id: s.customerId,
    device_id: s.deviceId,
    contextual_data: { demo: true, market: s.market },
  };
  switch (step.type) {
    case 'autocomplete':
      return { ...common, event_type: 'autocomplete', query: step.typed };
    case 'autocomplete_click':
      return {
        ...common,
        event_type: 'autocomplete_click',
        query: step.query,
        contextual_data: {
          ...common.contextual_data,
          typed_query: step.typed,
          position: step.position,
          selection_source: 'query_suggestion',
        },
      };
    case 'search':
      return {
        ...common,
        event_type: 'search',
        query: step.query,
        contextual_data: { ...common.contextual_data, search_source: step.source },
      };
    case 'product_click':
      return {
        ...common,
        event_type: 'product_click',
        product_id: step.productId,
        position: step.position,
        query: step.query,
        attribution_token: attributionToken,
      };
    case 'product_view':
      return {
        ...common,
        event_type: 'product_view',
        product_id: step.productId,
        variant_id: step.variantId,
        attribution_token: attributionToken,
      };
    case 'collection_view':
      return { ...common, event_type: 'collection_view', collection_handle: step.handle };
    case 'content_view':
      return {
        ...common,
        event_type: 'content_view',
        content_type: step.contentType,
        content_id: step.contentId,
        content_handle: step.handle,
      };
    case 'add_to_cart':
      return {
        ...common,
        event_type: 'add_to_cart',
        product_id: step.productId,
        variant_id: step.variantId,
        quantity: step.quantity,
        price: step.price,
        currency: 'USD',
        attribution_token: attributionToken,
      };
    case 'purchase':
      return {
        ...common,
        event_type: 'purchase',
        order_id: step.orderId,
        currency: 'USD',
        total_price: step.total,
        line_items: step.lines.map((l) => ({
          product_id: l.productId,
          variant_id: l.variantId,
          quantity: l.quantity,
          price: l.price,
        })),
      };
  }
}
