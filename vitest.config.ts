import os from 'node:os';
import path from 'node:path';
import { defineConfig } from 'vitest/config';

// V8's code cache on disk for every node process of the run, inherited through the environment: the test
// workers and the stacks, services and CLIs they start load the same modules over and over (an app
// process's imports: 1.2 → 0.7 CPU seconds with the cache warm). A quiet optimization: a missing or
// unwritable cache only costs the compilation.
process.env.NODE_COMPILE_CACHE ??= path.join(os.tmpdir(), 'node-compile-cache');

// Two projects: `stack` suites (test/stack/**) run against the real single-node stack that
// test/global-setup.ts starts once per run; `standalone` suites start what they need themselves
// (their own broker, their own chDB directory, child processes).
// The projects one after the other (sequence.groupOrder): the shared stack's suites first, two files at a
// time (they share one stack's cores; three measured no faster and less steady), then the standalone ones
// four at a time (most of their time is spent waiting on child processes, brokers and polls).
const shared = {
  pool: 'forks' as const,
  maxWorkers: 2,
  testTimeout: 60_000,
  hookTimeout: 120_000,
  teardownTimeout: 60_000,
  // Apache Kafka's JVMs (deploy/kafka/cluster.ts) with the client compiler only: the tests' short-lived
  // clusters never run long enough for C2's code to pay back its compilation (stack-on-kafka: 44 → 27 CPU
  // seconds), and the machine's cores are what npm test waits on. Benches start theirs as deployed.
  env: { KAFKA_JVM_OPTIONS: '-XX:TieredStopAtLevel=1' },
};

export default defineConfig({
  test: {
    reporters: ['default', './test/reporters/summary.ts'],
    projects: [
      {
        test: {
          ...shared,
          name: 'standalone',
          maxWorkers: 4,
          sequence: { groupOrder: 1 },
          include: [
            'test/**/*.test.ts',
            'services/**/*.test.ts',
            'streams/**/*.test.ts',
            'schemas/**/*.test.ts',
            'clickhouse/**/*.test.ts',
          ],
          exclude: ['test/stack/**', '**/node_modules/**'],
        },
      },
      {
        test: {
          ...shared,
          name: 'stack',
          sequence: { groupOrder: 0 },
          include: ['test/stack/**/*.test.ts'],
          globalSetup: ['test/global-setup.ts'],
        },
      },
    ],
  },
});
