import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 20_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // No packet leaves loopback, whatever the code under test does (see the file).
    setupFiles: ['test/support/loopback-only.ts'],
    // Every temporary folder of the run in one, removed at its end (see the file).
    globalSetup: ['test/support/temp-root.ts'],
  },
});
