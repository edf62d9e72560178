// The kafkajs module swaps (services/common/kafka/kafkajs/swaps.ts) hold in a fresh process, whatever the
// entry point: none silently falls back to kafkajs' own code. Each case runs a real Node process that
// imports the code the way its entry point does, then prints swapStatus(); the app's and the admin
// CLI's store-config writer path are the two the review found (the writer loaded kafkajs first).
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { createKafka, swapStatus } from '../../services/common/kafka/index.ts';
import { createLogger } from '../../services/common/logger.ts';
import { registry } from '../../services/common/metrics.ts';

const ALL_HOLD = {
  grouping: true,
  crc32c: true,
  record_encoder: true,
  record_decoder: true,
  idle_polling: true,
  send_retry: true,
  idle_fetch: true,
};

/** swapStatus() in a fresh Node process after importing `modules` in order (paths from the repo root) */
function statusInFreshProcess(modules: string[]): Record<string, boolean> {
  const script = [
    ...modules.map((m) => `await import(${JSON.stringify(`./${m}`)});`),
    "const { swapStatus } = await import('./services/common/kafka/index.ts');",
    'process.stdout.write(JSON.stringify(swapStatus()));',
  ].join('\n');
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
    cwd: process.cwd(),
    encoding: 'utf8',
    env: { ...process.env, LOG_LEVEL: 'silent' },
  });
  return JSON.parse(out.slice(out.lastIndexOf('{')));
}

describe('kafkajs module swaps', () => {
  it('all hold in the app process (services/app/main.ts imports)', () => {
    expect(statusInFreshProcess(['services/app/app.ts', 'services/app/modules.ts'])).toEqual(ALL_HOLD);
  });

  it('all hold on the admin CLI path (the store-config writer, which used to load kafkajs first)', () => {
    expect(statusInFreshProcess(['services/store-config/writer.ts'])).toEqual(ALL_HOLD);
  });

  it('all hold in the stream processors and the schema registry as their own processes', () => {
    expect(statusInFreshProcess(['streams/service.ts'])).toEqual(ALL_HOLD);
    expect(statusInFreshProcess(['services/schema-registry/index.ts'])).toEqual(ALL_HOLD);
  });

  it('are reported by a log line and the kafkajs_swap_active gauge', async () => {
    // in this process: the gauge
    createKafka(['127.0.0.1:1'], 'swaps-test', createLogger('swaps-test', 'silent'));
    expect(swapStatus()).toEqual(ALL_HOLD);
    for (const swap of Object.keys(ALL_HOLD)) {
      await expect
        .poll(async () => (await registry.metrics()).includes(`kafkajs_swap_active{swap="${swap}"} 1`))
        .toBe(true);
    }
    const out = execFileSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        [
          "const { createKafka } = await import('./services/common/kafka/index.ts');",
          "const { createLogger } = await import('./services/common/logger.ts');",
          "createKafka(['127.0.0.1:1'], 'a', createLogger('swaps'));",
          "createKafka(['127.0.0.1:1'], 'b', createLogger('swaps'));",
        ].join('\n'),
      ],
      { cwd: process.cwd(), encoding: 'utf8', env: { ...process.env, LOG_LEVEL: 'info', LOG_FORMAT: 'json' } },
    );
    // in a fresh process: one info line, however many clients it creates
    const lines = out.split('\n').filter((l) => l.includes('kafkajs swaps'));
    expect(lines).toHaveLength(1);
    const line = JSON.parse(lines[0]);
    expect(line.level).toBe(30);
    expect(line.kafkajsSwaps).toEqual(ALL_HOLD);
  });
});
