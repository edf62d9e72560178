// Merchandising on browse: which rule applies to a collection page, and what of it is live for this
// request (conditional pins, scheduled and targeted banners).
//
// The active rule: published, for the collection, for the sort order in use (a rule without a sort order
// applies to the collection's default sort), inside its schedule, whose conditions match the request;
// the lowest `priority`, then the lowest id. `preview_id` replaces it with the preview's rule (any status
// or schedule; its conditions still apply), 404 when the preview is unknown, expired (1 hour) or for
// another collection. Banners: at most 5 per rule, live only inside their schedule, when their conditions
// match and when both media are set.
//
// Request conditions read: geo.country / geo.province / geo.city, customer.tags / customer.signedIn /
// customer.returning / customer.segments, device (desktop|mobile|tablet|…), channel, market, locale,
// utm.source / utm.medium / utm.campaign / utm.term / utm.content, custom.<key>.
import type { ConditionGroup, ConfigPayload } from '../../../schemas/config.ts';
import { toNumericId } from '../../../schemas/fields.ts';
import type { StoreDirectory } from '../../store-config/api.ts';
import type { RequestContext } from '../context.ts';
import { StorefrontError } from '../errors.ts';
import { compileGroup, type Primitive } from './conditions.ts';

type Rule = Omit<ConfigPayload<'merch_rule'>, 'id'> & { id: string | null };
export type Banner = ConfigPayload<'merch_rule'>['banners'][number];

export interface ActiveRule {
  rule: Rule;
  /** the rule id as reported (the preview's id when previewing a new rule) */
  id: string;
  preview: boolean;
}

const many = (v: readonly Primitive[] | null | undefined): readonly Primitive[] => v ?? [];
const one = (v: Primitive | null | undefined): readonly Primitive[] => (v === null || v === undefined ? [] : [v]);

/** the values of a request property (unknown properties have none) */
export function requestValues(rc: RequestContext, property: string): readonly Primitive[] {
  const m = rc.marketing;
  switch (property) {
    case 'geo.country':
    case 'country':
      return one(rc.geo.country ?? rc.detectedCountry);
    case 'geo.province':
      return one(rc.geo.province);
    case 'geo.city':
      return one(rc.geo.city);
    case 'customer.tags':
      return many(rc.customer.tags);
    case 'customer.segments':
      return rc.customer.segments;
    case 'customer.signedIn':
      return one(rc.customer.signedIn ?? Boolean(rc.identity.customerId));
    case 'customer.returning':
      return one(rc.customer.returning);
    case 'device':
    case 'device_type':
      return [rc.deviceType];
    case 'channel':
    case 'shopping_channel':
      return [rc.shoppingChannel];
    case 'market':
      return one(rc.market?.code);
    case 'locale':
      return one(rc.locale);
    case 'utm.source':
      return one(m?.source);
    case 'utm.medium':
      return one(m?.medium);
    case 'utm.campaign':
      return one(m?.campaign);
    case 'utm.term':
      return one(m?.term);
    case 'utm.content':
      return one(m?.content);
  }
  if (property.startsWith('custom.')) {
    const v = rc.custom[property.slice(7)];
    return typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' ? [v] : [];
  }
  return [];
}

export function requestMatches(group: ConditionGroup | null, rc: RequestContext): boolean {
  if (!group) return true;
  return compileGroup<RequestContext>(
    group,
    (p) => (r) => requestValues(r, p),
    () => undefined,
  )(rc);
}

const inWindow = (start: string | null, end: string | null, now: number) =>
  (!start || Date.parse(start) <= now) && (!end || now < Date.parse(end));

export function activeRule(
  dir: StoreDirectory,
  storeId: string,
  handle: string,
  sort: { code: string; isDefault: boolean },
  rc: RequestContext,
  now: number,
  previewId: string | undefined,
): ActiveRule | null {
  if (previewId !== undefined) {
    const preview = dir.item(storeId, 'merch_preview', previewId);
    if (!preview || Date.parse(preview.expires_at) <= now)
      throw new StorefrontError(404, 'not_found', 'No such merchandising preview (unknown, or older than 1 hour).', [
        { path: 'preview_id', message: 'unknown or expired preview' },
      ]);
    if (preview.rule.collection_handle !== handle)
      throw new StorefrontError(
        404,
        'not_found',
        `The preview is for the collection ${preview.rule.collection_handle}.`,
        [{ path: 'preview_id', message: 'preview of another collection' }],
      );
    return requestMatches(preview.rule.conditions, rc)
      ? { rule: preview.rule, id: preview.rule.id ?? preview.id, preview: true }
      : null;
  }
  const candidates = dir
    .items(storeId, 'merch_rule')
    .filter(
      (r) =>
        r.status === 'published' &&
        r.collection_handle === handle &&
        (r.sort_order_code === null ? sort.isDefault : r.sort_order_code === sort.code) &&
        (!r.schedule || inWindow(r.schedule.start_at, r.schedule.end_at, now)) &&
        requestMatches(r.conditions, rc),
    )
    .sort((a, b) => a.priority - b.priority || (a.id < b.id ? -1 : 1));
  const rule = candidates[0];
  return rule ? { rule, id: rule.id, preview: false } : null;
}

/**
 * The latest schedule boundary (a rule's or a banner's start or end) of the collection's rules that has
 * passed at `now`, in ms (0 when none): part of the results-cache key, so an answer cached before a rule or
 * banner went live or ended is not served after that moment (no configuration change marks it).
 */
export function scheduleEpoch(dir: StoreDirectory, storeId: string, handle: string, now: number): number {
  let latest = 0;
  const passed = (iso: string | null) => {
    if (iso === null) return;
    const t = Date.parse(iso);
    if (t <= now && t > latest) latest = t;
  };
  for (const r of dir.items(storeId, 'merch_rule')) {
    if (r.collection_handle !== handle) continue;
    if (r.schedule) {
      passed(r.schedule.start_at);
      passed(r.schedule.end_at);
    }
    for (const b of r.banners) {
      passed(b.schedule_start_at);
      passed(b.schedule_end_at);
    }
  }
  return latest;
}

/** the rule's banners live for this request, lowest sort_index first */
export function liveBanners(rule: Rule, rc: RequestContext, now: number): Banner[] {
  return rule.banners
    .filter(
      (b) =>
        b.web_media !== null &&
        b.mobile_media !== null &&
        inWindow(b.schedule_start_at, b.schedule_end_at, now) &&
        requestMatches(b.conditions, rc),
    )
    .sort((a, b) => a.sort_index - b.sort_index);
}

/** the rule's pins whose conditions match, as (product id, position) */
export function livePins(rule: Rule, rc: RequestContext): { productId: string; position: number }[] {
  return rule.pins
    .filter((p) => requestMatches(p.conditions, rc))
    .map((p) => ({ productId: toNumericId(p.product_id, 'Product') as string, position: p.position }));
}
