import { defineConfig } from 'vitest/config';

// Two projects: `stack` suites (test/stack/**) run against the real single-node stack that
// test/global-setup.ts starts once per run; `standalone` suites start what they need themselves
// (their own broker, their own chDB directory, child processes).
const shared = {
  pool: 'forks' as const,
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
          include: ['test/stack/**/*.test.ts'],
          globalSetup: ['test/global-setup.ts'],
        },
      },
    ],
  },
});
