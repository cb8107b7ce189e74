import { describe, expect, it } from 'vitest';
import { isUuid, newInstanceId } from '../../../runtime/shared/uuid.ts';

describe('newInstanceId', () => {
  it('given many ids made in a row, then each is a version 7 uuid, all differ and they sort in the order made', () => {
    const before = Date.now();
    const ids = Array.from({ length: 5_000 }, () => newInstanceId());
    const after = Date.now();
    for (const id of ids) {
      expect(isUuid(id)).toBe(true);
      expect(id[14]).toBe('7'); // the version nibble
      expect('89ab').toContain(id[19]); // the RFC 9562 variant
    }
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
    // the first 48 bits are the time in milliseconds
    const ms = (id: string) => parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
    expect(ms(ids[0]!)).toBeGreaterThanOrEqual(before);
    expect(ms(ids.at(-1)!)).toBeLessThanOrEqual(after);
  });
});
