import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

describe('loadEmbeddedPostgres', () => {
  it('given the package loaded, then a failing exit code survives (the package exit hooks are removed)', () => {
    const script = `
      import { loadEmbeddedPostgres } from './runtime/store/embedded.ts';
      await loadEmbeddedPostgres();
      process.exitCode = 3;`;
    const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(child.status, child.stderr).toBe(3);
  });
});
