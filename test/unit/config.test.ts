import { describe, expect, it } from 'vitest';
import { readConfig } from '../../runtime/config.ts';
import { readSecuritySettings } from '../../runtime/security/settings.ts';

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

describe('readSecuritySettings: BATON_MAX_JSON_DEPTH', () => {
  it('given nothing, 64; given a value from 2 to 1000, that value', () => {
    expect(readSecuritySettings({}).limits.maxJsonDepth).toBe(64);
    expect(readSecuritySettings({ BATON_MAX_JSON_DEPTH: '200' }).limits.maxJsonDepth).toBe(200);
  });

  it('given a value past the ceiling or below 2, then a clear error names the variable and the range', () => {
    expect(() => readSecuritySettings({ BATON_MAX_JSON_DEPTH: '1001' })).toThrow(
      /BATON_MAX_JSON_DEPTH must be an integer of at least 2 and at most 1000, got "1001"/,
    );
    expect(() => readSecuritySettings({ BATON_MAX_JSON_DEPTH: '1' })).toThrow(
      /BATON_MAX_JSON_DEPTH must be an integer of at least 2 and at most 1000/,
    );
  });
});
