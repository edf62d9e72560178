// The demo store, as a module of the app (DEMO_STORE=true, the default of `npm start`).
//
// On the first start with a fresh data directory it creates "Demo Store" through the store-config
// writer, saves its id and access token in DATA_DIR/demo-store.json (0600) and announces the token and a
// ready-to-paste curl line, which `npm start` prints. A later start reads the file and announces the SAME
// token. The store is usable as soon as the app is up; the heavy part — configuration, the generated
// catalog (services/demo/generator/generator.ts), the replay of simulated shopper sessions through POST /beacon and
// the read API — runs in the background after the server listens, with progress in the log, resuming
// where a previous run stopped (services/demo/generator/load.ts).
//
// It also serves the demo product images, rendered with sharp on first request: GET /demo/images/<name>.
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { FastifyInstance } from 'fastify';
import { ImageCache } from './generator/images.ts';
import { DEMO_STORE_NAME, type DemoState, readDemoState, writeDemoState } from './generator/load.ts';
import type { DemoWorkerData } from './generator/worker.ts';
import { BURST_LINE } from './generator/vocab.ts';
import type { AppContext, AppModule } from '../app/context.ts';
import { storeDirectory } from '../store-config/module.ts';
import { openConfigWriter, writerOptionsFromConfig } from '../store-config/writer.ts';

/** the address clients use: a wildcard bind is reached over loopback */
function publicHost(host: string): string {
  if (host === '0.0.0.0' || host === '::' || host === '') return '127.0.0.1';
  return host.includes(':') ? `[${host}]` : host;
}

/**
 * What the printed request types: the start of the demo store's planted trending query. Suggestions come
 * from what shoppers searched (the trending aggregate), and every demo store, whatever its seed, has
 * `<BURST_LINE> <product type>` as its trending burst — searched by the last replayed sessions, whose
 * shoppers type these same letters into autocomplete (services/demo/generator/generator.ts, ground truth `trending`).
 */
export const DEMO_SUGGEST_PREFIX = BURST_LINE.slice(0, 3).toLowerCase();

export function demoCurl(baseUrl: string, token: string): string {
  return `curl -H 'X-Storefront-Access-Token: ${token}' '${baseUrl}/api/storefront/v1/search/complete?query=${DEMO_SUGGEST_PREFIX}'`;
}

export const demoModule: AppModule = {
  name: 'demo',
  async start(ctx: AppContext) {
    const { config } = ctx;
    if (!config.DEMO_STORE) return;
    const log = ctx.logger.child({ module: 'demo' });
    const baseUrl = `http://${publicHost(config.HOST)}:${config.HTTP_PORT}`;

    // --- product images ---------------------------------------------------------------------------
    const images = new ImageCache(path.join(config.dataDir, 'demo-images'));
    await ctx.http.register(
      async (app: FastifyInstance) => {
        app.get<{ Params: { name: string } }>('/:name', async (req, reply) => {
          const png = await images.get(req.params.name);
          if (!png) {
            return reply.code(404).send({
              error: {
                code: 'not_found',
                message: 'no such demo image',
                fields: [{ path: 'name', message: 'expected <type>-<colour>-<0-3>.png' }],
              },
            });
          }
          return reply
            .header('content-type', 'image/png')
            .header('cache-control', 'public, max-age=31536000, immutable')
            .send(png);
        });
      },
      { prefix: '/demo/images' },
    );

    // --- the store and its token (reused across starts) ----------------------------------------------
    const directory = storeDirectory(ctx);
    const writer = openConfigWriter({ ...writerOptionsFromConfig(config, log), clientId: 'demo-loader' });
    let writerClosed = false;
    const closeWriter = async () => {
      if (writerClosed) return;
      writerClosed = true;
      await writer
        .close()
        .catch((err: Error) => log.warn({ err: err.message }, 'demo: closing the config writer failed'));
    };

    let state = await readDemoState(config.dataDir);
    try {
      if (state) {
        await directory.ready();
        const known = directory.getStore(state.storeId);
        if (!known) {
          log.warn(
            { storeId: state.storeId },
            'demo: the saved demo store does not exist in this cluster any more; creating a new one',
          );
          state = undefined;
        } else if (!directory.authenticate(state.token).ok) {
          const issued = await writer.issueToken(state.storeId, 'demo');
          log.warn({ storeId: state.storeId }, 'demo: the saved demo token is no longer valid; issued a new one');
          state = { ...state, token: issued.token, tokenId: issued.tokenId };
          await writeDemoState(config.dataDir, state);
        } else {
          log.info({ storeId: state.storeId, progress: state.progress }, 'demo: reusing the demo store');
        }
      }
      if (!state) {
        const created = await writer.createStore({ name: DEMO_STORE_NAME, tokenLabel: 'demo' });
        state = {
          version: 1,
          storeId: created.storeId,
          token: created.token,
          tokenId: created.tokenId,
          createdAt: new Date().toISOString(),
          seed: config.DEMO_SEED,
          products: config.DEMO_PRODUCTS,
          sessions: config.DEMO_SESSIONS,
          imageBaseUrl: `${baseUrl}/demo/images`,
          anchorMs: Date.now(),
          progress: { config: false, catalog: false, catalogLines: 0, replayStartMs: null, replayed: 0, done: false },
        };
        // saved before anything else: the token is shown once and must survive a crash right after
        await writeDemoState(config.dataDir, state);
        log.info({ storeId: state.storeId }, 'demo: created the demo store');
      }
    } finally {
      await closeWriter();
    }
    // the app's own directory must know the store and token before they are announced
    await directory.ready();
    if (!directory.authenticate(state.token).ok)
      throw new Error(`demo store ${state.storeId}: its token does not authenticate after the directory caught up`);
    ctx.announce('demoToken', state.token);
    ctx.announce('demoCurl', demoCurl(baseUrl, state.token));

    // --- the background load (a worker thread: CPU-heavy generation never stalls the app) -------------
    let worker: Worker | undefined;
    let finished: Promise<void> = Promise.resolve();
    const st: DemoState = state;
    ctx.http.addHook('onListen', async () => {
      if (st.progress.done && config.DEMO_IMAGES === 0) return;
      const addr = ctx.http.server.address();
      const port = addr && typeof addr === 'object' ? addr.port : config.HTTP_PORT;
      const data: DemoWorkerData = { config, state: st, listenUrl: `http://${publicHost(config.HOST)}:${port}` };
      const w = new Worker(new URL('./generator/worker.ts', import.meta.url), {
        workerData: data,
        name: 'demo-loader',
      });
      worker = w;
      finished = new Promise<void>((resolve) => {
        w.on('error', (err) =>
          log.error(
            { err: err.message, stack: err.stack },
            'demo: the loader thread crashed; the next start resumes where it stopped',
          ),
        );
        w.on('exit', () => {
          worker = undefined;
          resolve();
        });
      });
    });
    const stop = async () => {
      const w = worker;
      if (!w) return;
      w.postMessage({ type: 'stop' });
      const timer = setTimeout(() => void w.terminate(), 10_000);
      await finished;
      clearTimeout(timer);
    };
    // stop the replay before the server stops accepting requests
    ctx.http.addHook('preClose', stop);
    ctx.onClose(stop);
  },
};
