// Hostile input from the OpenAPI documents: schemathesis generates requests (valid and invalid) for every
// operation of the storefront API (GET /api/storefront/v1/openapi.json, with a test store's token) and of
// the site's copy of it (/openapi.json on the app root), and checks each answer: no 5xx, the response
// valid against its documented schema, status code and content type. The app's own request counter
// (storefront_request_duration_seconds by status) must show no 5xx either, and its resident memory is
// printed before and after.
//
// In `npm test`: HOSTILE_EXAMPLES (default 15) examples per operation, fuzzing phase only (under two
// minutes). `npm run test:hostile`: the coverage phase (every boundary value and every schema violation
// schemathesis derives) plus 100 fuzzing examples per operation, about 10 000 requests.
import { beforeAll, describe, expect, it } from 'vitest';
import { appRssBytes, ensureSchemathesis, runSchemathesis } from '../reliability/schemathesis.ts';
import { stack } from '../helpers/stack.ts';
import { createTestStore, sampleItems } from '../helpers/stores.ts';

const LONG = process.env.HOSTILE_LONG === '1';
const EXAMPLES = Number(process.env.HOSTILE_EXAMPLES ?? (LONG ? 100 : 15));
const PHASES = LONG ? ['coverage', 'fuzzing'] : ['fuzzing'];
const TIMEOUT = LONG ? 3 * 60 * 60_000 : 5 * 60_000;

/** storefront requests answered so far, by status class, from the app's /metrics */
async function served(): Promise<{ total: number; server: number }> {
  const text = await (await fetch(`${stack().httpUrl}/metrics`)).text();
  let total = 0;
  let server = 0;
  for (const m of text.matchAll(/^storefront_request_duration_seconds_count\{[^}]*status="(\d+)"[^}]*\} (\d+)$/gm)) {
    total += Number(m[2]);
    if (m[1].startsWith('5')) server += Number(m[2]);
  }
  return { total, server };
}

let token: string;

beforeAll(async () => {
  ensureSchemathesis();
  ({ token } = await createTestStore({ name: 'hostile schemathesis', items: sampleItems() }));
});

describe('hostile requests generated from the OpenAPI documents', () => {
  it(
    'the storefront API answers every generated request without a 5xx and as its document says',
    async () => {
      const base = stack().httpUrl;
      const rssBefore = await appRssBytes(base);
      const before = await served();
      const run = await runSchemathesis({
        schemaUrl: `${base}/api/storefront/v1/openapi.json`,
        headers: { 'X-Storefront-Access-Token': token },
        maxExamples: EXAMPLES,
        phases: PHASES,
        seed: Number(process.env.HOSTILE_SEED ?? 1),
        timeoutMs: TIMEOUT,
      });
      const after = await served();
      const rssAfter = await appRssBytes(base);
      const mb = (b: number) => (b / 2 ** 20).toFixed(0);
      console.log(
        `schemathesis ${PHASES.join('+')} (${EXAMPLES} examples/operation): ${run.generated} cases, ` +
          `${after.total - before.total} storefront requests served, ${after.server - before.server} answered 5xx, ` +
          `${run.failures.length} failure kinds, ${run.errors.length} tool errors, ${run.seconds.toFixed(0)} s; ` +
          `app RSS ${mb(rssBefore)} MB → ${mb(rssAfter)} MB`,
      );
      expect(run.failures, run.output.slice(-6000)).toEqual([]);
      expect(run.errors, run.output.slice(-6000)).toEqual([]);
      expect(after.server - before.server).toBe(0);
      expect(after.total - before.total).toBeGreaterThan(EXAMPLES);
      if (LONG) expect(rssAfter - rssBefore).toBeLessThan(512 * 2 ** 20);
    },
    TIMEOUT,
  );

  it(
    "the site's copy of the document (/openapi.json, absolute server URL) drives the same API without a 5xx",
    async () => {
      const base = stack().httpUrl;
      const before = await served();
      const run = await runSchemathesis({
        schemaUrl: `${base}/openapi.json`,
        headers: { 'X-Storefront-Access-Token': token },
        maxExamples: LONG ? 100 : 5,
        seed: 2,
        timeoutMs: TIMEOUT,
      });
      const after = await served();
      expect(run.failures, run.output.slice(-6000)).toEqual([]);
      expect(run.errors, run.output.slice(-6000)).toEqual([]);
      expect(after.server - before.server).toBe(0);
      // the requests reached the app (the document's server URL is the app's own origin)
      expect(after.total - before.total).toBeGreaterThan(10);
    },
    TIMEOUT,
  );
});
