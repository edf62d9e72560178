// `npm run bench`: runs every benchmark script in turn and prints their figures. Each script measures
// its own baseline in the same run where one fits (e.g. a Fastify hello-world route next to the
// endpoint under test). Select some with `npm run bench -- broker beacon`.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const all = [
  'broker',
  'broker-storage',
  'codec',
  'beacon',
  'pipeline',
  'claims',
  'store-config',
  'catalog',
  'demo',
  'autocomplete',
  'browse',
  'search',
  'image-search',
  'search-libraries',
  'blocks',
  'analyst',
  'site',
  'sdk',
  'memory',
];
const wanted = process.argv.slice(2).length ? process.argv.slice(2) : all;

let failed = 0;
for (const name of wanted) {
  const file = path.join(here, `${name}.ts`);
  if (!existsSync(file)) {
    process.stdout.write(`\n== ${name}: no bench/${name}.ts yet, skipped\n`);
    continue;
  }
  process.stdout.write(`\n== ${name} (bench/${name}.ts)\n`);
  const r = spawnSync(process.execPath, [file], {
    stdio: 'inherit',
    env: { ...process.env, LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn' },
  });
  if (r.status !== 0) {
    failed++;
    process.stdout.write(`== ${name} failed (exit ${r.status})\n`);
  }
}
process.exit(failed ? 1 : 0);
