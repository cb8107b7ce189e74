import { describe, expect, it } from 'vitest';
import { readConfig } from '../../runtime/config.ts';

describe('readConfig', () => {
  it('given no variables, then the documented defaults', () => {
    const c = readConfig({});
    expect(c).toMatchObject({
      port: 8080,
      host: '127.0.0.1',
      databaseUrl: undefined,
      embeddedPgPort: 54329,
      logLevel: 'info',
      sweepIntervalMs: 1000,
      retryBackoffMs: 1000,
      startLanes: 2,
    });
    expect(c.dataDir.endsWith('.baton')).toBe(true);
    expect(c.samplesDir?.endsWith('samples')).toBe(true);
  });

  it('given variables, then they win; an empty BATON_SAMPLES_DIR deploys none', () => {
    const c = readConfig({
      PORT: '9000',
      HOST: '0.0.0.0',
      DATABASE_URL: 'postgres://x/y',
      BATON_DATA_DIR: '/tmp/b',
      LOG_LEVEL: 'debug',
      BATON_SAMPLES_DIR: '',
      BATON_START_LANES: '4',
    });
    expect(c).toMatchObject({
      port: 9000,
      host: '0.0.0.0',
      databaseUrl: 'postgres://x/y',
      dataDir: '/tmp/b',
      logLevel: 'debug',
      samplesDir: undefined,
      startLanes: 4,
    });
  });

  it('given a value that is not a fitting integer, then a clear error names the variable', () => {
    expect(() => readConfig({ PORT: 'abc' })).toThrow(/PORT/);
    expect(() => readConfig({ BATON_SWEEP_INTERVAL_MS: '0' })).toThrow(
      /BATON_SWEEP_INTERVAL_MS must be an integer of at least 10/,
    );
    expect(() => readConfig({ BATON_START_LANES: '0' })).toThrow(/BATON_START_LANES must be an integer of at least 1/);
  });
});
