import { defineConfig } from 'vitest/config';

// Two projects: `stack` suites (test/stack/**) run against the real single-node stack that
// test/global-setup.ts starts once per run; `standalone` suites start what they need themselves
// (their own broker, their own chDB directory, child processes).
// The projects one after the other (sequence.groupOrder): the shared stack's suites first, then the
// standalone ones; three files at a time in each (most of a suite's time is spent waiting on the stack,
// child processes, brokers and polls, not on the cores).
const shared = {
  pool: 'forks' as const,
  maxWorkers: 3,
  testTimeout: 60_000,
  hookTimeout: 120_000,
  teardownTimeout: 60_000,
};

export default defineConfig({
  test: {
    reporters: ['default', './test/reporters/summary.ts'],
    projects: [
      {
        test: {
          ...shared,
          name: 'standalone',
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
