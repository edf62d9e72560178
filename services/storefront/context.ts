// `identity` and `context` → one clean, normalized `RequestContext`, computed once per request and used
// by every later endpoint (and carried, minus server-only fields, in the request event).
//
// Pure: it takes the validated input (schemas/storefront.ts), what the server detected from the request
// (country, channel, device) and a view of the store's configuration (markets, B2B), and applies the
// spec's rules ("identity", "context", "Market resolution", item rules). B2B authorization is decided
// here too and returned as a failure the frame turns into a 403.
import { toNumericId } from '../../schemas/fields.ts';
import type { ContextInput, IdentityInput } from '../../schemas/storefront.ts';
import { type DeviceType, inferChannel } from '../common/enrich.ts';

// ─── what the store configuration provides ──────────────────────────────────────────────────────────────

export type MarketMode = 'strict' | 'pricing_only' | 'ignore';

export interface MarketInfo {
  /** the store's market code (config item id) */
  code: string;
  /** numeric platform market id, null when not configured */
  marketId: string | null;
  /** ISO 3166-1 alpha-2 codes (upper case) the market covers */
  countries: string[];
  /** ISO 4217 (upper case) or null */
  currency: string | null;
}

export interface StoreView {
  storeId: string;
  marketMode: MarketMode;
  /** code of the store's primary market, null when unset */
  primaryMarket: string | null;
  markets: MarketInfo[];
  /** company id owning a B2B company location (gid or numeric id as configured), undefined when unknown */
  companyOfLocation(locationId: string): string | undefined;
  /** company ids a customer belongs to (empty when none) */
  companiesOfCustomer(customerId: string): string[];
  /** server-side segments of a customer (may be empty) */
  segmentsOf(customerId: string): string[];
}

export interface RequestSignals {
  /** X-Requested-With header */
  requestedWith?: string | null;
  userAgent?: string | null;
  /** country detected from the client IP or a trusted edge header (upper case), null when unknown */
  detectedCountry?: string | null;
  deviceType: DeviceType;
}

// ─── the normalized result ──────────────────────────────────────────────────────────────────────────────

export interface NormalizedItem {
  /** numeric product id (digits) or null */
  productId: string | null;
  /** numeric variant id (digits) or null */
  variantId: string | null;
  title: string | null;
  type: string | null;
  /** major units, null when absent or not numeric */
  price: number | null;
  options: Record<string, string>;
}
export interface CartItem extends NormalizedItem {
  quantity: number;
}
export interface ViewedItem {
  productId: string;
  variantId: string | null;
  /** Unix ms, null when not sent (counts, without recency weighting) */
  at: number | null;
  title: string | null;
  type: string | null;
  options: Record<string, string>;
}
export interface PriorSearch {
  searchQuery: string;
  hadClick: boolean;
  hasResults: boolean;
  fromPage: string | null;
}

export interface ResolvedMarket {
  /** market code */
  code: string;
  /** numeric platform market id, when configured */
  marketId: string | null;
  source: 'explicit' | 'geo' | 'detected' | 'primary';
  mode: Exclude<MarketMode, 'ignore'>;
  /** strict: products filtered to the market catalog */
  filterCatalog: boolean;
  /** strict and pricing_only: market prices apply where they exist */
  marketPricing: boolean;
}

export interface RequestContext {
  storeId: string;
  identity: {
    deviceId: string | null;
    sessionId: string | null;
    customerId: string | null;
    companyLocationId: string | null;
  };
  /** B2B scope when identity.companyLocationId was sent and authorized */
  b2b: { companyLocationId: string; companyId: string } | null;
  geo: { country: string | null; province: string | null; city: string | null };
  detectedCountry: string | null;
  /** null when the store ignores markets */
  market: ResolvedMarket | null;
  pricingCountry: string | null;
  currency: string | null;
  locale: string | null;
  shoppingChannel: 'web' | 'app';
  deviceType: DeviceType;
  productsInCart: CartItem[];
  /** Σ price × quantity over cart items with a price */
  cartSubtotal: number;
  productsPurchased: NormalizedItem[];
  /** the 20 most recent, most recent first */
  productsViewed: ViewedItem[];
  priorSearches: PriorSearch[];
  freeShippingThreshold: number | null;
  marketing: {
    source: string | null;
    medium: string | null;
    campaign: string | null;
    term: string | null;
    content: string | null;
    /** ad networks derived from click-id parameter names (sorted); the raw tokens are discarded */
    clickNetworks: string[];
  } | null;
  customer: {
    signedIn: boolean | null;
    returning: boolean | null;
    numberOfOrders: number | null;
    averageOrderValue: number | null;
    daysBetweenOrders: number | null;
    daysSinceLastOrder: number | null;
    daysSinceOldestOrder: number | null;
    totalSpent: number | null;
    tags: string[] | null;
    /** filled by the server; any sent value is ignored */
    segments: string[];
  };
  /** as sent, or null; not derived from a session cookie (the spec does not define one) */
  session: { returning: boolean | null };
  /**
   * Company location identifier (spec: `context.b2bCompany`). With an authorized
   * `identity.companyLocationId` it is that location's id (server-resolved, wins over a sent value);
   * otherwise the client's value as sent, informational only: it is NOT verified and must never scope
   * catalog, prices or segments. Scoping reads `b2b`, which only an authorized location sets.
   */
  b2bCompany: string | null;
  custom: Record<string, unknown>;
}

export type ContextResult =
  | { ok: true; context: RequestContext }
  | { ok: false; status: 403; code: 'b2b_forbidden'; message: string; path: string };

export const MAX_VIEWED = 20;

// ─── ids, numbers ───────────────────────────────────────────────────────────────────────────────────────

/** numeric id or `gid://<platform>/<resource>/<id>` → the digits; anything else → null (schemas/fields.ts) */
export function normalizeGid(value: unknown, resource: string): string | null {
  return toNumericId(value, resource) ?? null;
}

/** a number, or a string holding one ("29.00", " 29 "); anything else → null. Major units. */
export function parsePrice(value: unknown): number | null {
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (typeof value !== 'string') return null;
  const v = value.trim();
  if (!/^-?(\d+(\.\d*)?|\.\d+)$/.test(v)) return null;
  const n = Number(v);
  return Number.isFinite(n) ? n : null;
}

/** fractions round down; missing, non-numeric or below 1 → 1 */
export function parseQuantity(value: unknown): number {
  const n =
    typeof value === 'number' ? value : typeof value === 'string' && value.trim() !== '' ? Number(value) : Number.NaN;
  if (!Number.isFinite(n)) return 1;
  const q = Math.floor(n);
  return q >= 1 ? Math.min(q, 1_000_000) : 1;
}

function optionsOf(o: Record<string, string | number | boolean> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (!o) return out;
  for (const [k, v] of Object.entries(o)) out[k] = String(v);
  return out;
}

const nonEmpty = (s: string | undefined | null): string | null => {
  if (s === undefined || s === null) return null;
  const t = s.trim();
  return t === '' ? null : t;
};

type ItemInput = NonNullable<ContextInput['productsPurchased']>[number];

function normalizeItem(it: ItemInput): NormalizedItem | null {
  const productId = normalizeGid(it.productId, 'Product');
  const variantId = normalizeGid(it.variantId, 'ProductVariant');
  const title = nonEmpty(it.title);
  if (productId === null && variantId === null && title === null) return null;
  return {
    productId,
    variantId,
    title,
    type: nonEmpty(it.type),
    price: parsePrice(it.price),
    options: optionsOf(it.options),
  };
}

// ─── click ids ──────────────────────────────────────────────────────────────────────────────────────────

/** click-id parameter (lower case) → ad network */
export const CLICK_ID_NETWORKS: Readonly<Record<string, string>> = {
  gclid: 'google',
  gbraid: 'google',
  wbraid: 'google',
  dclid: 'google',
  gclsrc: 'google',
  fbclid: 'meta',
  igshid: 'meta',
  msclkid: 'microsoft',
  ttclid: 'tiktok',
  twclid: 'x',
  li_fat_id: 'linkedin',
  sccid: 'snapchat',
  epik: 'pinterest',
  rdt_cid: 'reddit',
  yclid: 'yandex',
  irclickid: 'impact',
};

export function clickNetworks(clickIds: Record<string, unknown> | undefined): string[] {
  if (!clickIds) return [];
  const out = new Set<string>();
  for (const [name, token] of Object.entries(clickIds)) {
    if (token === null || token === undefined || token === '' || token === false) continue;
    const network = CLICK_ID_NETWORKS[name.toLowerCase()];
    if (network) out.add(network);
  }
  return [...out].sort();
}

// ─── markets ────────────────────────────────────────────────────────────────────────────────────────────

const COUNTRY = /^[A-Za-z]{2}$/;

function normCountry(c: string | null | undefined): string | null {
  if (!c) return null;
  const t = c.trim();
  return COUNTRY.test(t) ? t.toUpperCase() : null;
}

function marketByRef(markets: MarketInfo[], ref: string): MarketInfo | undefined {
  const r = ref.trim();
  if (COUNTRY.test(r)) return markets.find((m) => m.countries.includes(r.toUpperCase()));
  const id = normalizeGid(r, 'Market');
  return id === null ? undefined : markets.find((m) => m.marketId === id);
}

export interface MarketResolution {
  market: ResolvedMarket | null;
  pricingCountry: string | null;
  currency: string | null;
}

/**
 * 1. an explicit `context.market` that names one of the store's markets wins;
 * 2. else the market containing `context.geo.country`, else the one containing the detected country;
 * 3. else the store's primary market.
 * 4. an explicit two-letter code of the resolved market is the pricing country, ahead of geo/detected.
 * Mode `ignore` skips all of it (base catalog and prices).
 */
export function resolveMarket(
  store: Pick<StoreView, 'marketMode' | 'primaryMarket' | 'markets'>,
  explicit: string | undefined,
  geoCountry: string | null,
  detectedCountry: string | null,
): MarketResolution {
  if (store.marketMode === 'ignore') return { market: null, pricingCountry: null, currency: null };
  let found: MarketInfo | undefined;
  let source: ResolvedMarket['source'] = 'primary';
  if (explicit) {
    found = marketByRef(store.markets, explicit);
    source = 'explicit';
  }
  if (!found && geoCountry) {
    found = marketByRef(store.markets, geoCountry);
    source = 'geo';
  }
  if (!found && detectedCountry) {
    found = marketByRef(store.markets, detectedCountry);
    source = 'detected';
  }
  if (!found && store.primaryMarket) {
    found = store.markets.find((m) => m.code === store.primaryMarket);
    source = 'primary';
  }
  if (!found) return { market: null, pricingCountry: geoCountry ?? detectedCountry, currency: null };
  const explicitCountry = explicit && COUNTRY.test(explicit) ? explicit.toUpperCase() : null;
  const pricingCountry =
    explicitCountry && found.countries.includes(explicitCountry) ? explicitCountry : (geoCountry ?? detectedCountry);
  const strict = store.marketMode === 'strict';
  return {
    market: {
      code: found.code,
      marketId: found.marketId,
      source,
      mode: strict ? 'strict' : 'pricing_only',
      filterCatalog: strict,
      marketPricing: true,
    },
    pricingCountry,
    currency: found.currency,
  };
}

// ─── the whole thing ────────────────────────────────────────────────────────────────────────────────────

export function normalizeContext(
  store: StoreView,
  identityIn: IdentityInput | undefined,
  ctxIn: ContextInput | undefined,
  signals: RequestSignals,
): ContextResult {
  const idn = identityIn ?? {};
  const c = ctxIn ?? {};
  const identity = {
    deviceId: nonEmpty(idn.deviceId),
    sessionId: nonEmpty(idn.sessionId),
    customerId: nonEmpty(idn.customerId),
    companyLocationId: nonEmpty(idn.companyLocationId),
  };

  // B2B: a location needs a customer of the company that owns it
  let b2b: RequestContext['b2b'] = null;
  if (identity.companyLocationId) {
    if (!identity.customerId) {
      return {
        ok: false,
        status: 403,
        code: 'b2b_forbidden',
        message: 'identity.companyLocationId requires identity.customerId',
        path: 'identity.customerId',
      };
    }
    const companyId = store.companyOfLocation(identity.companyLocationId);
    if (!companyId || !store.companiesOfCustomer(identity.customerId).includes(companyId)) {
      return {
        ok: false,
        status: 403,
        code: 'b2b_forbidden',
        message: 'the customer does not belong to the company that owns this location',
        path: 'identity.companyLocationId',
      };
    }
    b2b = { companyLocationId: identity.companyLocationId, companyId };
  }

  const geo = {
    country: normCountry(c.geo?.country),
    province: nonEmpty(c.geo?.province),
    city: nonEmpty(c.geo?.city),
  };
  const detectedCountry = normCountry(signals.detectedCountry ?? null);
  const m = resolveMarket(store, c.market, geo.country, detectedCountry);

  const productsInCart: CartItem[] = [];
  let cartSubtotal = 0;
  for (const it of c.productsInCart ?? []) {
    const n = normalizeItem(it);
    if (!n) continue;
    const quantity = parseQuantity(it.quantity);
    productsInCart.push({ ...n, quantity });
    if (n.price !== null) cartSubtotal += n.price * quantity;
  }
  const productsPurchased: NormalizedItem[] = [];
  for (const it of c.productsPurchased ?? []) {
    const n = normalizeItem(it);
    if (n) productsPurchased.push(n);
  }

  // views: the 20 most recent. Timestamped views order by `at`; views without `at` count as older than
  // any timestamped one, and among themselves a later array position is more recent.
  const viewed: (ViewedItem & { pos: number })[] = [];
  (c.productsViewed ?? []).forEach((v, pos) => {
    const productId = normalizeGid(v.id ?? v.productId, 'Product') ?? normalizeGid(v.productId, 'Product');
    if (productId === null) return;
    const at = typeof v.at === 'number' && Number.isFinite(v.at) && v.at >= 0 ? Math.floor(v.at) : null;
    viewed.push({
      productId,
      variantId: normalizeGid(v.variantId, 'ProductVariant'),
      at,
      title: nonEmpty(v.title),
      type: nonEmpty(v.type),
      options: optionsOf(v.options),
      pos,
    });
  });
  viewed.sort((a, b) => {
    if (a.at !== null && b.at !== null) return b.at - a.at || b.pos - a.pos;
    if (a.at !== null) return -1;
    if (b.at !== null) return 1;
    return b.pos - a.pos;
  });
  const productsViewed = viewed.slice(0, MAX_VIEWED).map(({ pos: _pos, ...v }) => v);

  const priorSearches: PriorSearch[] = (c.priorSearches ?? []).map((p) => ({
    searchQuery: p.searchQuery,
    hadClick: p.hadClick ?? false,
    hasResults: p.hasResults ?? p.hadResults ?? false,
    fromPage: p.fromPage ?? null,
  }));

  const fst =
    typeof c.freeShippingThreshold === 'number' ? c.freeShippingThreshold : parsePrice(c.freeShippingThreshold);
  const freeShippingThreshold = fst !== null && Number.isFinite(fst) && fst > 0 ? fst : null;

  const mk = c.marketing;
  const marketing = mk
    ? {
        source: nonEmpty(mk.source),
        medium: nonEmpty(mk.medium),
        campaign: nonEmpty(mk.campaign),
        term: nonEmpty(mk.term),
        content: nonEmpty(mk.content),
        clickNetworks: clickNetworks(mk.clickIds),
      }
    : null;

  const cu = c.customer ?? {};
  const customer: RequestContext['customer'] = {
    signedIn: cu.signedIn ?? (identity.customerId ? true : null),
    returning: cu.returning ?? null,
    numberOfOrders: cu.numberOfOrders ?? null,
    averageOrderValue: cu.averageOrderValue ?? null,
    daysBetweenOrders: cu.daysBetweenOrders ?? null,
    daysSinceLastOrder: cu.daysSinceLastOrder ?? null,
    daysSinceOldestOrder: cu.daysSinceOldestOrder ?? null,
    totalSpent: cu.totalSpent ?? null,
    tags: identity.customerId || cu.signedIn ? (cu.tags ?? []) : null,
    segments: identity.customerId ? store.segmentsOf(identity.customerId) : [],
  };

  const locale = nonEmpty(c.locale)?.toLowerCase() ?? null;
  const sentCurrency = c.currency ? c.currency.toUpperCase() : null;

  const shoppingChannel = c.shoppingChannel ?? inferChannel(signals.requestedWith, signals.userAgent);

  return {
    ok: true,
    context: {
      storeId: store.storeId,
      identity,
      b2b,
      geo,
      detectedCountry,
      market: m.market,
      pricingCountry: m.pricingCountry,
      currency: m.currency ?? sentCurrency,
      locale,
      shoppingChannel,
      deviceType: signals.deviceType,
      productsInCart,
      cartSubtotal: Math.round(cartSubtotal * 100) / 100,
      productsPurchased,
      productsViewed,
      priorSearches,
      freeShippingThreshold,
      marketing,
      customer,
      session: { returning: c.session?.returning ?? null },
      b2bCompany: b2b ? b2b.companyLocationId : nonEmpty(c.b2bCompany),
      custom: c.custom ?? {},
    },
  };
}

/**
 * The part of the context a request event carries (`contextual_data`): the validated, normalized client
 * context, nothing server-internal beyond what the client could have sent, no raw click tokens.
 */
export function contextForEvent(rc: RequestContext): Record<string, unknown> {
  return {
    geo: rc.geo,
    market: rc.market?.code ?? null,
    pricingCountry: rc.pricingCountry,
    currency: rc.currency,
    locale: rc.locale,
    shoppingChannel: rc.shoppingChannel,
    productsInCart: rc.productsInCart,
    productsPurchased: rc.productsPurchased,
    productsViewed: rc.productsViewed,
    priorSearches: rc.priorSearches,
    freeShippingThreshold: rc.freeShippingThreshold,
    marketing: rc.marketing,
    customer: rc.customer,
    session: rc.session,
    b2bCompany: rc.b2bCompany,
    custom: rc.custom,
  };
}
