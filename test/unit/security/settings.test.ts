import { describe, expect, it } from 'vitest';
import { readSecuritySettings } from '../../../runtime/security/settings.ts';

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
