// Wait until the app reports the catalog module ready (/readyz): its topics, schemas, producer and
// projection consumers come up in the background after the HTTP server.
import { stack } from '../helpers/stack.ts';

export async function catalogReady(timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    try {
      const res = await fetch(`${stack().httpUrl}/readyz`);
      const body = (await res.json()) as { checks?: Record<string, { ok: boolean; error?: string }> };
      const c = body.checks?.catalog;
      if (c?.ok) return;
      last = c?.error ?? 'no catalog check';
    } catch (err) {
      last = (err as Error).message;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`the catalog module did not become ready within ${timeoutMs} ms: ${last}`);
}
