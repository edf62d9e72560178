// The contract every service uses to resolve a storefront access token to a store and to read that
// store's configuration. Implemented by the store-config projection (this folder), which consumes the
// compacted `stores.config.v1` topic into memory; a change written by the admin CLI is visible within 1 s.
//
// Tokens are never stored: the directory keeps SHA-256 hashes and compares them in constant time.

export type StoreStatus = 'active' | 'suspended';

export interface StoreRecord {
  storeId: string;
  name: string;
  status: StoreStatus;
  /** primary market code and the market application mode */
  primaryMarket: string | null;
  marketMode: 'strict' | 'pricing_only' | 'ignore';
  /** autocomplete regional mode: per-country suggestions with store-wide fallback, or one set for all */
  autocompleteMode: 'per_region' | 'global';
}

export type AuthResult =
  | { ok: true; store: StoreRecord }
  | { ok: false; status: 401 | 402; code: 'missing_token' | 'invalid_token' | 'store_suspended'; message: string };

export interface StoreDirectory {
  /** token → store; 401 when missing or unknown, 402 when the store is suspended */
  authenticate(token: string | undefined | null): AuthResult;
  getStore(storeId: string): StoreRecord | undefined;
  /** the full typed configuration of one kind for a store (sort orders, blocks, synonyms, …); see schemas/config.ts */
  getConfig<K extends string>(storeId: string, kind: K): unknown[];
  /** resolves once the projection has caught up with everything written before the call */
  ready(): Promise<void>;
}
