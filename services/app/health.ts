// /healthz (the process is up) and /readyz (its dependencies answer), for the app and for orchestrators.
import type { FastifyInstance } from 'fastify';

export type Check = () => Promise<void>;

export async function healthRoutes(app: FastifyInstance, opts: { checks: Record<string, Check>; timeoutMs?: number }) {
  const timeoutMs = opts.timeoutMs ?? 2_000;
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_req, reply) => {
    const results: Record<string, { ok: boolean; error?: string; ms: number }> = {};
    await Promise.all(
      Object.entries(opts.checks).map(async ([name, check]) => {
        const t0 = performance.now();
        try {
          await Promise.race([
            check(),
            new Promise((_, reject) =>
              setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms`)), timeoutMs).unref(),
            ),
          ]);
          results[name] = { ok: true, ms: Math.round(performance.now() - t0) };
        } catch (err) {
          results[name] = { ok: false, error: (err as Error).message, ms: Math.round(performance.now() - t0) };
        }
      }),
    );
    const ready = Object.values(results).every((r) => r.ok);
    return reply.code(ready ? 200 : 503).send({ status: ready ? 'ready' : 'not_ready', checks: results });
  });
}
