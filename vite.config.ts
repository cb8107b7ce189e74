import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

// One config for the designer build and the test suites. The designer's root is
// designer/ for `vite build` and `vite` (dev server); vitest runs in mode "test"
// and keeps the repository root, so test paths stay as they are.
export default defineConfig(({ mode }) => ({
  ...(mode === 'test'
    ? {}
    : {
        root: 'designer',
        base: './',
        build: { outDir: 'dist', emptyOutDir: true, chunkSizeWarningLimit: 2000 },
        // The dev server proxies the API to a running `npm start`.
        server: { proxy: { '/api': 'http://127.0.0.1:8080', '/healthz': 'http://127.0.0.1:8080' } },
      }),
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Test files mostly wait (on PostgreSQL, timers, child processes, Chromium): two at a time
    // fit on two cores, where vitest's default of one fewer than the cores would run one.
    maxWorkers: Math.max(2, availableParallelism() - 1),
  },
}));
