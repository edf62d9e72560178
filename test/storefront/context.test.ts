// Every normalization rule of identity and context (services/storefront/context.ts), one by one.
import { describe, expect, it } from 'vitest';
import { ContextSchema, IdentitySchema } from '../../schemas/storefront.ts';
import {
  clickNetworks,
  type MarketInfo,
  normalizeContext,
  normalizeGid,
  parsePrice,
  parseQuantity,
  type RequestContext,
  type RequestSignals,
  type StoreView,
} from '../../services/storefront/context.ts';

const MARKETS: MarketInfo[] = [
  { code: 'us', marketId: '1001', countries: ['US'], currency: 'USD' },
  { code: 'eu', marketId: '1002', countries: ['DE', 'FR', 'NL'], currency: 'EUR' },
  { code: 'uk', marketId: '1003', countries: ['GB'], currency: 'GBP' },
];

function store(patch: Partial<StoreView> = {}): StoreView {
  return {
    storeId: 'st1',
    marketMode: 'strict',
    primaryMarket: 'us',
    markets: MARKETS,
    companyOfLocation: (id) => (id.endsWith('/501') ? '77' : undefined),
    companiesOfCustomer: (id) => (id === '9001' ? ['77'] : []),
    segmentsOf: (id) => (id === '9001' ? ['b2b'] : []),
    ...patch,
  };
}

const signals = (patch: Partial<RequestSignals> = {}): RequestSignals => ({
  deviceType: 'desktop',
  detectedCountry: null,
  ...patch,
});

/** validate like the frame does, then normalize */
function ctx(
  context: unknown,
  opts: { identity?: unknown; store?: Partial<StoreView>; signals?: Partial<RequestSignals> } = {},
): RequestContext {
  const c = ContextSchema.parse(context ?? {});
  const i = IdentitySchema.parse(opts.identity ?? {});
  const r = normalizeContext(store(opts.store), i, c, signals(opts.signals));
  if (!r.ok) throw new Error(r.message);
  return r.context;
}

describe('market resolution', () => {
  it('an explicit market wins: country code, numeric id, or market gid', () => {
    expect(ctx({ market: 'de', geo: { country: 'GB' } }, { signals: { detectedCountry: 'US' } }).market).toMatchObject({
      code: 'eu',
      source: 'explicit',
    });
    expect(ctx({ market: '1003', geo: { country: 'DE' } }).market).toMatchObject({ code: 'uk', source: 'explicit' });
    expect(ctx({ market: 'gid://shopify/Market/1002' }).market).toMatchObject({
      code: 'eu',
      marketId: '1002',
      source: 'explicit',
    });
  });

  it('otherwise geo.country, then the detected country, then the primary market', () => {
    expect(ctx({ geo: { country: 'fr' } }, { signals: { detectedCountry: 'GB' } }).market).toMatchObject({
      code: 'eu',
      source: 'geo',
    });
    expect(ctx({}, { signals: { detectedCountry: 'GB' } }).market).toMatchObject({ code: 'uk', source: 'detected' });
    expect(ctx({}, { signals: { detectedCountry: 'JP' } }).market).toMatchObject({ code: 'us', source: 'primary' });
    // an explicit market that names no market of the store falls through
    expect(ctx({ market: '4242' }, { signals: { detectedCountry: 'NL' } }).market).toMatchObject({
      code: 'eu',
      source: 'detected',
    });
  });

  it('the three modes: strict filters and prices, pricing_only prices, ignore skips resolution', () => {
    expect(ctx({ market: 'de' }).market).toMatchObject({ mode: 'strict', filterCatalog: true, marketPricing: true });
    expect(ctx({ market: 'de' }, { store: { marketMode: 'pricing_only' } }).market).toMatchObject({
      mode: 'pricing_only',
      filterCatalog: false,
      marketPricing: true,
    });
    const ignored = ctx({ market: 'de', currency: 'chf' }, { store: { marketMode: 'ignore' } });
    expect(ignored.market).toBeNull();
    expect(ignored.pricingCountry).toBeNull();
    expect(ignored.currency).toBe('CHF');
  });

  it('an explicit two-letter code of the resolved market sets the pricing country ahead of the detected location', () => {
    expect(ctx({ market: 'fr', geo: { country: 'DE' } }, { signals: { detectedCountry: 'NL' } }).pricingCountry).toBe(
      'FR',
    );
    expect(ctx({ market: '1002', geo: { country: 'DE' } }, { signals: { detectedCountry: 'NL' } }).pricingCountry).toBe(
      'DE',
    );
    expect(ctx({ market: '1002' }, { signals: { detectedCountry: 'NL' } }).pricingCountry).toBe('NL');
  });

  it('currency: upper case; the market currency resolved by the server wins', () => {
    expect(ctx({ currency: 'usd', market: 'de' }).currency).toBe('EUR');
    expect(ctx({ currency: 'usd' }, { store: { markets: [], primaryMarket: null } }).currency).toBe('USD');
  });
});

describe('cart and purchase items', () => {
  it('drops entries without productId, variantId or a non-empty title', () => {
    const c = ctx({
      productsInCart: [
        { price: 5 },
        { title: '  ' },
        { title: 'Tee' },
        { variantId: '77' },
        { productId: 'gid://shopify/Product/12' },
      ],
    });
    expect(c.productsInCart.map((i) => [i.title, i.variantId, i.productId])).toEqual([
      ['Tee', null, null],
      [null, '77', null],
      [null, null, '12'],
    ]);
    expect(
      ctx({ productsPurchased: [{ type: 'x' }, { productId: 5 }] }).productsPurchased.map((p) => p.productId),
    ).toEqual(['5']);
  });

  it('price: number or numeric string in major units; anything else is ignored', () => {
    expect(parsePrice(29)).toBe(29);
    expect(parsePrice('29.00')).toBe(29);
    expect(parsePrice(' 4.5 ')).toBe(4.5);
    expect(parsePrice('$29')).toBeNull();
    expect(parsePrice('')).toBeNull();
    expect(
      ctx({
        productsInCart: [
          { title: 'a', price: '12.50' },
          { title: 'b', price: 'cheap' },
        ],
      }).productsInCart.map((i) => i.price),
    ).toEqual([12.5, null]);
  });

  it('productId: numeric id or gid://<platform>/Product/<id>; other forms are not ids', () => {
    expect(normalizeGid('123', 'Product')).toBe('123');
    expect(normalizeGid(123, 'Product')).toBe('123');
    expect(normalizeGid('gid://shopify/Product/8812', 'Product')).toBe('8812');
    expect(normalizeGid('gid://shopify/ProductVariant/8812', 'Product')).toBeNull();
    expect(normalizeGid('red-shirt', 'Product')).toBeNull();
    // an unusable productId with no other identifier drops the entry
    expect(ctx({ productsInCart: [{ productId: 'red-shirt' }] }).productsInCart).toEqual([]);
  });

  it('quantity: fractions round down; missing, non-numeric or below 1 count as 1; subtotal = Σ price × quantity', () => {
    expect([
      parseQuantity(2.9),
      parseQuantity(undefined),
      parseQuantity('abc'),
      parseQuantity(0),
      parseQuantity(-3),
      parseQuantity('3'),
    ]).toEqual([2, 1, 1, 1, 1, 3]);
    const c = ctx({
      productsInCart: [
        { title: 'a', price: 10, quantity: 2.7 },
        { title: 'b', price: '5.5', quantity: 'x' },
        { title: 'c', quantity: 4 },
      ],
    });
    expect(c.productsInCart.map((i) => i.quantity)).toEqual([2, 1, 4]);
    expect(c.cartSubtotal).toBe(25.5);
  });
});

describe('productsViewed', () => {
  it('accepts id or productId; keeps the 20 most recent, most recent first; `at` optional', () => {
    const views = Array.from({ length: 25 }, (_, i) =>
      i % 2 ? { id: String(100 + i), at: 1_000 + i } : { productId: `gid://shopify/Product/${100 + i}`, at: 1_000 + i },
    );
    const c = ctx({ productsViewed: [{ id: '1' }, ...views, { title: 'no id' }] });
    expect(c.productsViewed).toHaveLength(20);
    expect(c.productsViewed[0]).toMatchObject({ productId: '124', at: 1024 });
    expect(c.productsViewed[19]).toMatchObject({ productId: '105', at: 1005 });
    // views without `at` count, ranked after timestamped ones (later position = more recent)
    const few = ctx({ productsViewed: [{ id: '1' }, { id: '2' }, { id: '3', at: 5 }] });
    expect(few.productsViewed.map((v) => [v.productId, v.at])).toEqual([
      ['3', 5],
      ['2', null],
      ['1', null],
    ]);
  });
});

describe('scalars', () => {
  it('locale lower case; freeShippingThreshold ignored unless a number > 0', () => {
    expect(ctx({ locale: 'en-US' }).locale).toBe('en-us');
    expect(ctx({ freeShippingThreshold: 50 }).freeShippingThreshold).toBe(50);
    expect(ctx({ freeShippingThreshold: '75.5' }).freeShippingThreshold).toBe(75.5);
    for (const bad of [0, -1, 'free', null, true])
      expect(ctx({ freeShippingThreshold: bad }).freeShippingThreshold).toBeNull();
  });

  it('priorSearches: hadClick and hasResults default to false; hadResults is an alias', () => {
    const c = ctx({
      priorSearches: [
        { searchQuery: 'boots' },
        { searchQuery: 'hats', hadClick: true, hadResults: true, fromPage: '/x' },
      ],
    });
    expect(c.priorSearches).toEqual([
      { searchQuery: 'boots', hadClick: false, hasResults: false, fromPage: null },
      { searchQuery: 'hats', hadClick: true, hasResults: true, fromPage: '/x' },
    ]);
    expect(ContextSchema.safeParse({ priorSearches: [{ hadClick: true }] }).success).toBe(false);
  });

  it('marketing.clickIds reduce to networks; raw tokens are discarded', () => {
    expect(clickNetworks({ gclid: 'abc', fbclid: 'def', msclkid: 'x', ttclid: 'y', unknown: 'z', wbraid: '' })).toEqual(
      ['google', 'meta', 'microsoft', 'tiktok'],
    );
    const c = ctx({ marketing: { source: 'google', medium: 'cpc', clickIds: { GCLID: 'secret-token' } } });
    expect(c.marketing).toEqual({
      source: 'google',
      medium: 'cpc',
      campaign: null,
      term: null,
      content: null,
      clickNetworks: ['google'],
    });
    expect(JSON.stringify(c)).not.toContain('secret-token');
  });

  it('customer.segments are filled by the server; sent values are ignored', () => {
    expect(ctx({ customer: { segments: ['vip'] } }).customer.segments).toEqual([]);
    expect(ctx({ customer: { segments: ['vip'] } }, { identity: { customerId: '9001' } }).customer.segments).toEqual([
      'b2b',
    ]);
    expect(ctx({}, { identity: { customerId: '42' } }).customer).toMatchObject({
      signedIn: true,
      segments: [],
      tags: [],
    });
    expect(ctx({}).customer.tags).toBeNull();
  });

  it('shopping channel: sent value, else X-Requested-With tapcart/fuego or an in-app UA → app, else web', () => {
    expect(ctx({}).shoppingChannel).toBe('web');
    expect(ctx({}, { signals: { requestedWith: 'co.tapcart.app' } }).shoppingChannel).toBe('app');
    expect(ctx({}, { signals: { requestedWith: 'com.fuego.shop' } }).shoppingChannel).toBe('app');
    expect(
      ctx({}, { signals: { userAgent: 'Mozilla/5.0 (Linux; Android 13; Pixel 7 Build/TQ3A; wv) AppleWebKit/537.36' } })
        .shoppingChannel,
    ).toBe('app');
    expect(ctx({ shoppingChannel: 'web' }, { signals: { requestedWith: 'tapcart' } }).shoppingChannel).toBe('web');
  });

  it('unknown keys are dropped at every level', () => {
    const c = ContextSchema.parse({
      geo: { country: 'US', street: 'x' },
      extra: 1,
      customer: { signedIn: true, ssn: '1' },
    });
    expect(c).toEqual({ geo: { country: 'US' }, customer: { signedIn: true } });
    expect(IdentitySchema.parse({ sessionId: 's', password: 'p' })).toEqual({ sessionId: 's' });
  });
});

describe('identity and B2B', () => {
  it('a company location needs a customer of the owning company', () => {
    const s = store();
    const i = (identity: Record<string, string>) =>
      normalizeContext(s, IdentitySchema.parse(identity), undefined, signals());
    expect(i({ companyLocationId: 'gid://shopify/CompanyLocation/501' })).toMatchObject({
      ok: false,
      status: 403,
      path: 'identity.customerId',
    });
    expect(i({ companyLocationId: 'gid://shopify/CompanyLocation/501', customerId: '42' })).toMatchObject({
      ok: false,
      status: 403,
    });
    const ok = i({ companyLocationId: 'gid://shopify/CompanyLocation/501', customerId: '9001' });
    expect(ok.ok && ok.context.b2b).toEqual({
      companyLocationId: 'gid://shopify/CompanyLocation/501',
      companyId: '77',
    });
    expect(IdentitySchema.safeParse({ companyLocationId: '501' }).success).toBe(false);
  });
});
