// Print the planted ground truth of the demo store in a data directory, as JSON (for analysts'
// notebooks and external benchmarks). The store is regenerated from the inputs saved with it, so this
// is exactly what its sessions were generated from. The access token is not printed.
//
//   node services/demo/generator/ground-truth.ts [DATA_DIR]        (default: $DATA_DIR or ./data)
import path from 'node:path';
import { generateDemoStore } from './generator.ts';
import { readDemoState } from './load.ts';

const dataDir = path.resolve(process.argv[2] ?? process.env.DATA_DIR ?? './data');
const state = await readDemoState(dataDir);
if (!state) {
  process.stderr.write(`no demo store in ${dataDir} (start the stack once with DEMO_STORE=true)\n`);
  process.exit(1);
}
const store = generateDemoStore({
  seed: state.seed,
  products: state.products,
  sessions: state.sessions,
  anchorMs: state.anchorMs,
  imageBaseUrl: state.imageBaseUrl,
});
process.stdout.write(
  `${JSON.stringify(
    {
      store_id: state.storeId,
      seed: state.seed,
      products: store.productCount,
      sessions: store.sessionCount,
      replay_start: state.progress.replayStartMs === null ? null : new Date(state.progress.replayStartMs).toISOString(),
      loaded: state.progress.done,
      ground_truth: store.groundTruth,
    },
    null,
    2,
  )}\n`,
);
