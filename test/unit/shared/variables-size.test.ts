// jsonbTextBytes measures variables as PostgreSQL does (octet_length(value::jsonb::text)); the
// expected figures were read from PostgreSQL for the same values.
import { describe, expect, it } from 'vitest';
import { jsonbTextBytes } from '../../../runtime/shared/variables-size.ts';

describe('jsonbTextBytes', () => {
  it.each([
    [{}, 2],
    [[], 2],
    [{ a: 1 }, 8],
    [{ a: [1, 2, { b: 'x"y\n\u0001é€😀' }], c: null, d: true, e: false, f: 1.5, g: -3, h: 'plain' }, 112],
    [{ big: 'x'.repeat(1000), n: 12345678901 }, 1029],
    [{ nested: { deep: { deeper: [[], {}] } } }, 42],
    [{ 'ké y': 'ünï' }, 18],
  ])('given %j, then it counts %i bytes, as PostgreSQL prints the jsonb', (value, bytes) => {
    expect(jsonbTextBytes(value)).toBe(bytes);
  });
});
