import { describe, expect, it } from 'vitest';
import { stack } from '../helpers/stack.ts';

describe('the single-node stack', () => {
  it('is alive and ready: Kafka, Redis and ClickHouse reachable', async () => {
    expect((await fetch(`${stack().httpUrl}/healthz`)).status).toBe(200);
    // dependencies answer from the start; modules (catalog, streams, autocomplete) come up in the
    // background after the HTTP server, so readiness as a whole may take a while when this file runs first
    let r = await fetch(`${stack().httpUrl}/readyz`);
    let body = (await r.json()) as { checks: unknown };
    expect(body.checks).toMatchObject({ kafka: { ok: true }, redis: { ok: true }, clickhouse: { ok: true } });
    for (const deadline = Date.now() + 90_000; r.status !== 200 && Date.now() < deadline; ) {
      await new Promise((res) => setTimeout(res, 250));
      r = await fetch(`${stack().httpUrl}/readyz`);
      body = (await r.json()) as { checks: unknown };
    }
    expect(r.status, JSON.stringify(body)).toBe(200);
  }, 120_000);

  it('sends x-request-id (a ULID) and x-service-build on every response, errors included', async () => {
    for (const path of ['/healthz', '/no-such-route']) {
      const r = await fetch(`${stack().httpUrl}${path}`);
      expect(r.headers.get('x-request-id')).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
      expect(r.headers.get('x-service-build')).toBe('test');
    }
  });

  it('never adopts a client-sent x-request-id (it is the attribution token)', async () => {
    const chosen = '01ARZ3NDEKTSV4RRFFQ69G5FAV';
    const r = await fetch(`${stack().httpUrl}/healthz`, { headers: { 'x-request-id': chosen } });
    expect(r.headers.get('x-request-id')).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(r.headers.get('x-request-id')).not.toBe(chosen);
  });

  it('exposes Prometheus metrics', async () => {
    await fetch(`${stack().clickhouseUrl}/?query=SELECT%201`);
    const text = await (await fetch(`${stack().httpUrl}/metrics`)).text();
    expect(text).toContain('process_cpu_user_seconds_total');
    expect(text).toMatch(/analyst_sql_queries_total\{outcome="ok"\} [1-9]/);
  });
});
