// Wait until the app reports the catalog module ready (/readyz) — its topics, schemas and producer come
// up in the background after the HTTP server — and the stream processors, which include the catalog
// projections (streams/registry.ts), started.
import { stack } from '../helpers/stack.ts';

export async function catalogReady(timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    try {
      const res = await fetch(`${stack().httpUrl}/readyz`);
      const body = (await res.json()) as { checks?: Record<string, { ok: boolean; error?: string }> };
      const pending = (['catalog', 'streams'] as const).filter((name) => !body.checks?.[name]?.ok);
      if (pending.length === 0) return;
      last = pending.map((name) => `${name}: ${body.checks?.[name]?.error ?? 'no check'}`).join('; ');
    } catch (err) {
      last = (err as Error).message;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`the catalog module and the stream processors did not become ready within ${timeoutMs} ms: ${last}`);
}
