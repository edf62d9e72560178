// Search rules, ranking rules and redirects: the store's configuration (schemas/config.ts) applied to a
// text search.
//
// Search rules (`search_rule`): published rules whose targeting matches (query_match over the folded
// query: any / exact / contains / starts_with against `queries`, and the request `conditions`), lowest
// `priority` first, then id. All matching rules apply, their actions in order. Known actions change the
// request (replace_query, expand_query, apply_filter, set_sort_order, redirect) or the ranking
// (pin_products, boost, bury); an action of a type this build does not know is reported as
// `unsupported_action_type` and skipped, and the rest of the request proceeds. Whether an action changed
// anything (`changed`) is settled once the results are known (engine.ts).
//
// Ranking rules (`ranking_rule`): published rules for the query (an empty `queries` list = every search);
// all matching apply: pin (product_ids first, in order), promote / demote (products matching `match`, the
// rank score scaled by 1 ± magnitude).
import type { ConditionGroup, ConfigPayload } from '../../../schemas/config.ts';
import { toNumericId } from '../../../schemas/fields.ts';
import type { StoreDirectory } from '../../store-config/api.ts';
import type { RequestContext } from '../context.ts';
import { requestMatches } from '../results/merch.ts';
import { foldText } from './analyze.ts';

type SearchRule = ConfigPayload<'search_rule'>;
type RankingRule = ConfigPayload<'ranking_rule'>;

export interface ActionRecord {
  rule_id: string;
  type: string;
  changed: boolean;
  reason?: 'unsupported_action_type';
}

/** what the matched search rules ask for, in application order */
export interface RuleEffects {
  ruleIds: string[];
  actions: ActionRecord[];
  replaceQuery: { query: string; action: ActionRecord } | null;
  expansions: string[];
  filters: { group: ConditionGroup; action: ActionRecord }[];
  pins: { productIds: string[]; action: ActionRecord }[];
  boosts: { match: ConditionGroup; factor: number; action: ActionRecord }[];
  sortOrderCode: { code: string; action: ActionRecord } | null;
  redirect: { url: string; action: ActionRecord } | null;
}

function targets(rule: SearchRule, folded: string): boolean {
  const t = rule.targeting;
  if (t.query_match === 'any') return true;
  const qs = t.queries.map(foldText);
  switch (t.query_match) {
    case 'exact':
      return qs.includes(folded);
    case 'contains':
      return qs.some((q) => ` ${folded} `.includes(` ${q} `));
    case 'starts_with':
      return qs.some((q) => folded === q || folded.startsWith(`${q} `));
  }
}

export function matchedSearchRules(
  dir: StoreDirectory,
  storeId: string,
  folded: string,
  rc: RequestContext,
): SearchRule[] {
  return dir
    .items(storeId, 'search_rule')
    .filter((r) => r.status === 'published' && targets(r, folded) && requestMatches(r.targeting.conditions, rc))
    .sort((a, b) => a.priority - b.priority || (a.id < b.id ? -1 : 1));
}

export function ruleEffects(rules: readonly SearchRule[], requestSortCode: string | undefined): RuleEffects {
  const fx: RuleEffects = {
    ruleIds: rules.map((r) => r.id),
    actions: [],
    replaceQuery: null,
    expansions: [],
    filters: [],
    pins: [],
    boosts: [],
    sortOrderCode: null,
    redirect: null,
  };
  for (const rule of rules) {
    for (const raw of rule.actions) {
      const action: ActionRecord = { rule_id: rule.id, type: raw.type, changed: false };
      fx.actions.push(action);
      const a = raw as Record<string, unknown>;
      switch (raw.type) {
        case 'replace_query':
          fx.replaceQuery = { query: String(a.query), action };
          action.changed = true; // settled against the query in engine.ts
          break;
        case 'expand_query':
          for (const q of a.queries as string[]) {
            const f = foldText(q);
            if (!fx.expansions.includes(f)) {
              fx.expansions.push(f);
              action.changed = true;
            }
          }
          break;
        case 'apply_filter':
          fx.filters.push({ group: a.filter_group as ConditionGroup, action });
          break;
        case 'pin_products':
          fx.pins.push({
            productIds: (a.product_ids as string[]).flatMap((id) => toNumericId(id, 'Product') ?? []),
            action,
          });
          break;
        case 'boost':
          fx.boosts.push({ match: a.match as ConditionGroup, factor: 1 + Number(a.factor), action });
          break;
        case 'bury':
          fx.boosts.push({ match: a.match as ConditionGroup, factor: Number(a.factor), action });
          break;
        case 'set_sort_order':
          // the shopper's explicit choice wins; the first rule that sets one wins over later rules
          if (requestSortCode === undefined && !fx.sortOrderCode) {
            fx.sortOrderCode = { code: String(a.sort_order_code), action };
            action.changed = true;
          }
          break;
        case 'redirect':
          if (!fx.redirect) {
            fx.redirect = { url: String(a.url), action };
            action.changed = true;
          }
          break;
        default:
          action.reason = 'unsupported_action_type';
      }
    }
  }
  return fx;
}

/** published ranking rules for a folded query */
export function matchedRankingRules(dir: StoreDirectory, storeId: string, folded: string): RankingRule[] {
  return dir
    .items(storeId, 'ranking_rule')
    .filter((r) => r.status === 'published' && (r.queries.length === 0 || r.queries.map(foldText).includes(folded)))
    .sort((a, b) => (a.id < b.id ? -1 : 1));
}

/**
 * A redirect target that search may serve inline: a plain collection path (`/collections/<handle>`, or
 * the full URL of one) with no tag segment, query string or fragment. Links with tags, filters, a sort or
 * a page keep the normal redirect.
 */
export function inlineCollectionHandle(url: string): string | null {
  let path = url;
  if (/^https?:\/\//i.test(url)) {
    try {
      const u = new URL(url);
      if (u.search || u.hash) return null;
      path = u.pathname;
    } catch {
      return null;
    }
  }
  const m = path.match(/^\/collections\/([a-z0-9][a-z0-9_-]*)\/?$/);
  return m ? m[1] : null;
}
