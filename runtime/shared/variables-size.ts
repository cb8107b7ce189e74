// The size of an instance's variables as PostgreSQL stores and measures them: the UTF-8
// length of the jsonb value's text, which puts a space after every ':' and ',' (so it is a
// little larger than JSON.stringify's). The engine checks a result's variables against the
// limit with the variables its transition has already read, so the check costs no query.

/** Bytes of `value`'s jsonb text (octet_length(value::text)) for a value parsed from JSON. */
export function jsonbTextBytes(value: unknown): number {
  if (value === null || value === undefined) return 4;
  if (typeof value === 'string') return Buffer.byteLength(JSON.stringify(value));
  if (typeof value === 'number' || typeof value === 'boolean') return String(JSON.stringify(value)).length;
  if (Array.isArray(value)) {
    let bytes = 2 + 2 * Math.max(0, value.length - 1);
    for (const item of value) bytes += jsonbTextBytes(item);
    return bytes;
  }
  const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
  let bytes = 2 + 2 * Math.max(0, entries.length - 1);
  for (const [key, v] of entries) bytes += Buffer.byteLength(JSON.stringify(key)) + 2 + jsonbTextBytes(v);
  return bytes;
}
