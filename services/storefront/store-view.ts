// The storefront's read-only view of one store's configuration, derived from the StoreDirectory and
// cached per store until the directory reports a change for that store (`onChange`), so a request does
// not re-read or re-index configuration items.
import { gidNumericId } from '../../schemas/config.ts';
import type { StoreDirectory, StoreRecord } from '../store-config/api.ts';
import { buildCuration, type Curation } from './autocomplete/index.ts';
import { normalizeQuery, stemKey } from './autocomplete/text.ts';
import type { MarketInfo, StoreView } from './context.ts';

export interface SortOrderEntry {
  code: string;
  nickname: string;
}

export interface StorefrontStoreView extends StoreView {
  record: StoreRecord;
  curation: Curation;
  /** normalized term → URL; also keyed by the term's stem key (semantic-ish match) */
  redirects: ReadonlyMap<string, string>;
  /** whether any redirect matches by stem key (else a query's stem key need not be computed) */
  semanticRedirects: boolean;
  sortOrders: SortOrderEntry[];
  /** distinct per built view: changes whenever the store's configuration does (results cache keys) */
  generation: number;
  /** market code → its configured price list (null: none configured) */
  marketPriceLists: ReadonlyMap<string, string | null>;
}

export class StoreViews {
  private readonly cache = new Map<string, StorefrontStoreView>();
  private readonly unsubscribe: () => void;
  private readonly directory: StoreDirectory;

  constructor(directory: StoreDirectory) {
    this.directory = directory;
    this.unsubscribe = directory.onChange((c) => {
      this.cache.delete(c.storeId);
    });
  }

  get(record: StoreRecord): StorefrontStoreView {
    const hit = this.cache.get(record.storeId);
    if (hit) return hit;
    const view = build(this.directory, record);
    this.cache.set(record.storeId, view);
    return view;
  }

  close(): void {
    this.unsubscribe();
    this.cache.clear();
  }
}

let generations = 0;

const customerDigits = (id: string): string | undefined => gidNumericId(id.trim(), 'Customer');

function build(dir: StoreDirectory, record: StoreRecord): StorefrontStoreView {
  const storeId = record.storeId;
  const markets: MarketInfo[] = dir.items(storeId, 'market').map((m) => ({
    code: m.code,
    // a market configured by its gid alone is matched by that gid's numeric id too
    marketId: m.market_id ?? (m.gid ? (gidNumericId(m.gid, 'Market') ?? null) : null),
    countries: m.countries,
    currency: m.currency,
  }));
  const locationCompany = new Map<string, string>();
  for (const l of dir.items(storeId, 'b2b_company_location')) {
    const id = gidNumericId(l.gid, 'CompanyLocation');
    if (id) locationCompany.set(id, l.company_id);
  }
  const customerCompanies = new Map<string, string[]>();
  for (const c of dir.items(storeId, 'b2b_customer')) customerCompanies.set(c.customer_id, c.company_ids);

  const redirects = new Map<string, string>();
  let semanticRedirects = false;
  for (const r of dir.items(storeId, 'redirect_term')) {
    const term = normalizeQuery(r.term);
    if (!term) continue;
    redirects.set(term, r.url);
    if (r.match === 'semantic') {
      semanticRedirects = true;
      const k = `~${stemKey(term)}`;
      if (!redirects.has(k)) redirects.set(k, r.url);
    }
  }

  const sortOrders: SortOrderEntry[] = [{ code: 'relevance', nickname: 'Relevance' }];
  for (const s of dir.items(storeId, 'sort_order')) sortOrders.push({ code: s.code, nickname: s.nickname });

  return {
    record,
    storeId,
    marketMode: record.marketMode,
    primaryMarket: record.primaryMarket,
    markets,
    companyOfLocation(locationId) {
      const id = gidNumericId(locationId.trim(), 'CompanyLocation');
      return id ? locationCompany.get(id) : undefined;
    },
    companiesOfCustomer(customerId) {
      const id = customerDigits(customerId);
      return id ? (customerCompanies.get(id) ?? []) : [];
    },
    segmentsOf(customerId) {
      const id = customerDigits(customerId);
      const companies = id ? customerCompanies.get(id) : undefined;
      return companies?.length ? ['b2b', ...companies.map((c) => `company:${c}`)] : [];
    },
    curation: buildCuration(dir.items(storeId, 'autocomplete_curation')),
    redirects,
    semanticRedirects,
    sortOrders,
    generation: ++generations,
    marketPriceLists: new Map(dir.items(storeId, 'market').map((m) => [m.code, m.price_list_id])),
  };
}

/** the redirect URL for a normalized query: exact term, else (semantic terms) the same stem key */
export function redirectFor(
  view: Pick<StorefrontStoreView, 'redirects' | 'semanticRedirects'>,
  normalized: string,
): string | undefined {
  if (view.redirects.size === 0) return undefined;
  return (
    view.redirects.get(normalized) ??
    (view.semanticRedirects ? view.redirects.get(`~${stemKey(normalized)}`) : undefined)
  );
}
