// fast-check arbitraries: random JSON, and mutations of a valid body or a BPMN file.
import fc from 'fast-check';

/** Numbers of runs: short in `npm test`, long under `npm run fuzz` (FUZZ_RUNS). */
export function runs(short: number): number {
  const n = Number(process.env.FUZZ_RUNS);
  return Number.isInteger(n) && n > 0 ? n : short;
}

/** A test timeout that grows with the number of runs (a long `npm run fuzz` must not time out). */
export function timeoutFor(numRuns: number, perRunMs: number): number {
  return 30_000 + numRuns * perRunMs;
}

const hostileString = fc.oneof(
  fc.string(),
  fc.constantFrom(
    '',
    ' ',
    '\u0000',
    '\ud800',
    '💥',
    '${x}',
    "'; drop table instances; --",
    '../../etc/passwd',
    '<x/>',
    'x'.repeat(300),
    '1e309',
    '-0',
    '__proto__',
  ),
);

const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  hostileString,
  fc.constantFrom(null, true, -1, 0, 2 ** 31, 2 ** 53, -(2 ** 63), 1.5, [], {}, [[[]]], { __proto__: { a: 1 } }),
);

/** A valid body with one to three fields dropped, replaced or added. */
export function mutatedBody(valid: Record<string, unknown>): fc.Arbitrary<unknown> {
  const keys = Object.keys(valid);
  const edit = fc.oneof(
    fc.record({ op: fc.constant('drop' as const), key: fc.constantFrom(...(keys.length ? keys : ['x'])) }),
    fc.record({ op: fc.constant('set' as const), key: fc.constantFrom(...(keys.length ? keys : ['x'])), value: hostileValue }),
    fc.record({ op: fc.constant('add' as const), key: fc.oneof(hostileString, fc.constant('__proto__')), value: hostileValue }),
  );
  return fc.array(edit, { minLength: 1, maxLength: 3 }).map((edits) => {
    const body: Record<string, unknown> = structuredClone(valid);
    for (const e of edits) {
      if (e.op === 'drop') delete body[e.key];
      else Object.defineProperty(body, e.key, { value: e.value, enumerable: true, writable: true, configurable: true });
    }
    return body;
  });
}

/** A body that is anything at all: random JSON, or not JSON. */
export const anyBody: fc.Arbitrary<{ raw: string }> = fc.oneof(
  fc.jsonValue({ maxDepth: 4 }).map((v) => ({ raw: JSON.stringify(v) ?? 'null' })),
  fc.string().map((s) => ({ raw: s })),
  fc
    .constantFrom('{', '{"a":', '[1,2', '\u0000', '{"__proto__":{"polluted":1}}', '{"constructor":{"prototype":{"x":1}}}')
    .map((raw) => ({ raw })),
);

/** A BPMN file with a few textual mutations: cuts, duplicated slices, swapped attribute values, junk. */
export function mutatedXml(files: string[]): fc.Arbitrary<string> {
  const mutation = fc.record({
    kind: fc.constantFrom('cut', 'dup', 'junk', 'attr', 'truncate'),
    at: fc.nat(),
    len: fc.nat({ max: 200 }),
    junk: fc.oneof(
      hostileString,
      fc.constantFrom('<', '>', '"', '&amp;', '<!DOCTYPE x>', '<!ENTITY a "b">', ']]>', 'xmlns:x="y"'),
    ),
  });
  return fc
    .record({ file: fc.constantFrom(...files), edits: fc.array(mutation, { minLength: 1, maxLength: 4 }) })
    .map(({ file, edits }) => {
      let xml = file;
      for (const e of edits) {
        const at = xml.length ? e.at % xml.length : 0;
        if (e.kind === 'cut') xml = xml.slice(0, at) + xml.slice(at + e.len);
        else if (e.kind === 'dup') xml = xml.slice(0, at) + xml.slice(at, at + e.len) + xml.slice(at);
        else if (e.kind === 'junk') xml = xml.slice(0, at) + e.junk + xml.slice(at);
        else if (e.kind === 'truncate') xml = xml.slice(0, at);
        else
          xml = xml.replace(/="[^"]*"/g, (m, offset: number) =>
            offset >= at && offset < at + 400 ? `="${e.junk.replace(/"/g, '')}"` : m,
          );
      }
      return xml;
    });
}
