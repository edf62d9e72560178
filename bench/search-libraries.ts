// Keyword-index candidates for search's per-store text index, measured against each other on the demo
// catalog (issue #17: "evaluate kept libraries and ClickHouse's own text index on the bench before
// choosing"): search's own inverted index (services/storefront/search/text-index.ts), MiniSearch, Orama,
// FlexSearch (document mode) and a ClickHouse MergeTree with `text` indexes through chDB. Every candidate
// gets the same documents (title, type, vendor, tags, option values, description) and the same analyzer
// (services/storefront/search/analyze.ts: folding, stop words, Porter stems) where it takes one, and the
// same field weights where it can weigh fields.
//
// Per candidate: index build time and heap growth; query latency p50/p99 over the evaluation queries and
// 200 generated ones; nDCG@10 of the keyword ranking alone on the planted exact, plural, misspelled and
// multi-word queries (relevant = 1; synonyms and learned queries need the understanding layer, which no
// library has); whether a typo ("linnen"), a plural and a prefix ("lin") find linen products; incremental
// updates. Printed, and written to bench/out/latest.json under "search-libraries".
// Run: node bench/search-libraries.ts [products=100000]

import os from 'node:os';
import path from 'node:path';
import { create, insertMultiple, search as oramaSearch } from '@orama/orama';
import FlexSearch from 'flexsearch';
import MiniSearch from 'minisearch';
import { openDb } from '../clickhouse/client.ts';
import { generateDemoStore } from '../services/demo/generator/generator.ts';
import { ndcgAtK } from '../services/demo/generator/quality.ts';
import { COLORS, PRODUCT_TYPES } from '../services/demo/generator/vocab.ts';
import { foldText, htmlText, isContentWord, stem, terms, words } from '../services/storefront/search/analyze.ts';
import { type Doc, FIELD_WEIGHTS, ProductTextIndex } from '../services/storefront/search/text-index.ts';
import { recordFigures } from './out.ts';

const N = Number(process.argv[2] ?? 100_000);
const BUILD_LIMIT_S = Number(process.env.BENCH_BUILD_LIMIT_S ?? 180);
const FIELDS = Object.keys(FIELD_WEIGHTS) as (keyof typeof FIELD_WEIGHTS)[];
const fmt = (n: number, d = 2) => n.toFixed(d);
const line = (label: string, value: string) => process.stdout.write(`  ${label.padEnd(44)} ${value}\n`);
const pct = (xs: number[], p: number) => {
  const a = [...xs].sort((x, y) => x - y);
  return a[Math.min(a.length - 1, Math.floor((p / 100) * a.length))];
};
const heapMb = () => {
  globalThis.gc?.();
  return process.memoryUsage().heapUsed / 1024 / 1024;
};

process.stdout.write(`search-libraries (demo catalog, ${N.toLocaleString('en-US')} products)\n`);
const demo = generateDemoStore({ products: N, sessions: 300 });
const docs: Doc[] = [];
for (const p of demo.products())
  docs.push({
    id: String(p.id),
    title: String(p.title),
    product_type: String(p.product_type ?? ''),
    vendor: String(p.vendor ?? ''),
    tags: ([] as string[]).concat(p.tags ?? []).join(' '),
    options: (p.options ?? []).flatMap((o) => (o.values ?? []).map(String)).join(' '),
    description: htmlText(String(p.body_html ?? '')),
  });
const judged = demo.groundTruth.searchEval.filter((e) =>
  ['exact', 'plural', 'misspelled', 'multi_word'].includes(e.kind),
);
const queries = judged.map((e) => e.query);
for (let i = 0; queries.length < judged.length + 200; i++) {
  const t = PRODUCT_TYPES[i % PRODUCT_TYPES.length];
  queries.push(`${COLORS[(i * 7) % COLORS.length].name} ${i % 2 ? t.plural : t.name}`.toLowerCase());
}
const linen = new Set(docs.filter((d) => /\blinen\b/i.test(d.title)).map((d) => d.id));

interface Candidate {
  name: string;
  build(): Promise<void>;
  /** product ids, best first */
  search(q: string): Promise<string[]>;
  incremental: string;
}

const candidates: Candidate[] = [];

// search's own index (services/storefront/search/text-index.ts): BM25+ over the products holding every term
{
  let index: ProductTextIndex;
  candidates.push({
    name: 'own inverted index (search uses it)',
    incremental: 'put / remove (ordinals, compaction)',
    async build() {
      index = new ProductTextIndex(docs);
    },
    async search(q) {
      return index
        .search(q, { prefix: true })
        .hits.sort((a, b) => b.matched - a.matched || b.score - a.score)
        .slice(0, 10)
        .map((h) => h.id);
    },
  });
}

// MiniSearch: BM25+, field boosts, our analyzer; prefix on the last term and one typo (words of 5+ letters)
{
  let ms: MiniSearch<Doc>;
  candidates.push({
    name: 'MiniSearch 7.2',
    incremental: 'add / discard / replace',
    async build() {
      ms = new MiniSearch<Doc>({
        idField: 'id',
        fields: FIELDS,
        storeFields: [],
        tokenize: (text) => words(foldText(text)),
        processTerm: (term) => (isContentWord(term) ? stem(term) : null),
        searchOptions: { boost: { ...FIELD_WEIGHTS }, combineWith: 'OR' },
      });
      ms.addAll(docs);
    },
    async search(q) {
      return ms
        .search(q, {
          prefix: (term, i, all) => i === all.length - 1 && term.length >= 3,
          fuzzy: (term) => (term.length >= 5 ? 1 : false),
          weights: { fuzzy: 0.4, prefix: 0.5 },
        })
        .slice(0, 10)
        .map((r) => String(r.id));
    },
  });
}

// Orama: BM25, field boosts, typo tolerance; our analyzer as its tokenizer
{
  let db: any;
  candidates.push({
    name: 'Orama 3.1',
    incremental: 'insert / remove / update',
    async build() {
      db = (create as (o: unknown) => unknown)({
        schema: Object.fromEntries(FIELDS.map((f) => [f, 'string'])) as Record<string, 'string'>,
        components: {
          tokenizer: { language: 'english', normalizationCache: new Map(), tokenize: (raw: string) => terms(raw) },
        },
      });
      // in chunks, giving up past BUILD_LIMIT_S (Orama's inserts are the slowest part at 100 000 products)
      const started = performance.now();
      for (let i = 0; i < docs.length; i += 5_000) {
        await insertMultiple(db, docs.slice(i, i + 5_000) as never, 5_000);
        if ((performance.now() - started) / 1000 > BUILD_LIMIT_S)
          throw new Error(`build gave up after ${BUILD_LIMIT_S} s at ${i + 5_000} of ${docs.length} products`);
      }
    },
    async search(q) {
      const r = await oramaSearch(db, {
        term: q,
        properties: FIELDS,
        boost: { ...FIELD_WEIGHTS },
        tolerance: 1,
        limit: 10,
      });
      return r.hits.map((h) => String((h.document as Doc).id));
    },
  });
}

// FlexSearch: per-field ranked id lists (no numeric scores): combined as Σ weight · (1 − rank / hits)
{
  let index: any;
  candidates.push({
    name: 'FlexSearch 0.8 (Document)',
    incremental: 'add / remove / update',
    async build() {
      index = new FlexSearch.Document({
        document: { id: 'id', index: FIELDS },
        tokenize: 'forward',
        encode: (text: string) => terms(text),
      } as never);
      for (const d of docs) index.add(d);
    },
    async search(q) {
      const perField = index.search(q, { limit: 200, suggest: true } as never) as unknown as {
        field: string;
        result: (string | number)[];
      }[];
      const score = new Map<string, number>();
      for (const f of perField)
        f.result.forEach((id, rank) => {
          const w = FIELD_WEIGHTS[f.field as keyof typeof FIELD_WEIGHTS] ?? 1;
          score.set(String(id), (score.get(String(id)) ?? 0) + w * (1 - rank / f.result.length));
        });
      return [...score]
        .sort((a, b) => b[1] - a[1])
        .slice(0, 10)
        .map(([id]) => id);
    },
  });
}

// ClickHouse: the analyzed fields in a MergeTree with a `text` index on all of them; a match is any
// query stem (hasAnyTokens through the index), ranked by the weighted count of stems per field
{
  const dir = path.join(os.tmpdir(), `sd-bench-textindex-${process.pid}`);
  const db = await openDb({ chdbPath: dir, database: 'bench' });
  candidates.push({
    name: 'ClickHouse text index (chDB 26.7)',
    incremental: 'inserts (new parts); deletes by mutation',
    async build() {
      await db.command('DROP TABLE IF EXISTS docs');
      await db.command(
        `CREATE TABLE docs (id UInt64, ${FIELDS.map((f) => `${f} String`).join(', ')}, all_text String,
           INDEX all_idx all_text TYPE text(tokenizer = 'splitByNonAlpha') GRANULARITY 1)
         ENGINE = MergeTree ORDER BY id SETTINGS enable_full_text_index = 1`,
      );
      const rows = docs.map((d) => {
        const row: Record<string, unknown> = { id: d.id };
        for (const f of FIELDS) row[f] = terms(d[f]).join(' ');
        row.all_text = FIELDS.map((f) => row[f]).join(' ');
        return row;
      });
      for (let i = 0; i < rows.length; i += 20_000) await db.insert('docs', rows.slice(i, i + 20_000));
      await db.command('OPTIMIZE TABLE docs FINAL');
    },
    async search(q) {
      const t = [...new Set(terms(q))];
      if (!t.length) return [];
      const score = FIELDS.map(
        (f) => `${FIELD_WEIGHTS[f]} * length(arrayIntersect(splitByChar(' ', ${f}), {t:Array(String)}))`,
      ).join(' + ');
      const rows = await db.query<{ id: string }>(
        `SELECT toString(id) AS id FROM docs WHERE hasAnyTokens(all_text, {t:Array(String)})
         ORDER BY ${score} DESC, id LIMIT 10 SETTINGS enable_full_text_index = 1`,
        { t },
      );
      return rows.map((r) => r.id);
    },
  });
}

const results: Record<string, unknown>[] = [];
for (const c of candidates) {
  try {
    const h0 = heapMb();
    const b0 = performance.now();
    await c.build();
    const buildS = (performance.now() - b0) / 1000;
    const heap = heapMb() - h0;
    for (const q of queries.slice(0, 20)) await c.search(q); // warm
    const ms: number[] = [];
    for (const q of queries) {
      const a = performance.now();
      await c.search(q);
      ms.push(performance.now() - a);
    }
    const scores: number[] = [];
    for (const e of judged) scores.push(ndcgAtK(await c.search(e.query), new Map(e.relevant.map((id) => [id, 1])), 10));
    const ndcg = scores.reduce((a, b) => a + b, 0) / scores.length;
    const finds = async (q: string) => (await c.search(q)).filter((id) => linen.has(id)).length;
    const r = {
      name: c.name,
      buildSeconds: buildS,
      heapMb: heap,
      p50Ms: pct(ms, 50),
      p99Ms: pct(ms, 99),
      ndcgKeyword: ndcg,
      typo: await finds('linnen shirt'),
      plural: await finds('linen shirts'),
      prefix: await finds('lin'),
      incremental: c.incremental,
    };
    results.push(r);
    line(
      c.name,
      `build ${fmt(buildS, 1)} s, heap +${fmt(heap, 0)} MB, query p50 ${fmt(r.p50Ms)} ms p99 ${fmt(r.p99Ms)} ms, nDCG@10 ${fmt(ndcg, 3)}, linen hits in top 10 for typo/plural/prefix ${r.typo}/${r.plural}/${r.prefix}`,
    );
  } catch (err) {
    results.push({ name: c.name, error: (err as Error).message });
    line(c.name, `failed: ${(err as Error).message.slice(0, 200)}`);
  }
}

recordFigures('search-libraries', { products: N, queries: queries.length, results });
process.exit(0);
