// Checks over the source: SQL is parameterized, and every string a client sends has a bound.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CAMUNDA_OPERATIONS } from '../../runtime/ops/openapi-camunda-routes.ts';
import type { Operation } from '../../runtime/ops/openapi-document.ts';
import { OPERATIONS } from '../../runtime/ops/openapi-routes.ts';

const root = path.resolve(import.meta.dirname, '../..');

function files(dir: string, ext: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(path.join(dir, e.name), ext) : e.name.endsWith(ext) ? [path.join(dir, e.name)] : [],
  );
}

const SQL =
  /\b(select\s[\s\S]*\bfrom|insert\s+into|update\s+\w+\s+set|delete\s+from|create\s+(table|database|index)|drop\s+(table|database)|alter\s+table|listen|notify)\b/i;

/**
 * Interpolations that are not data: constant SQL fragments and channel names, placeholders
 * numbered as `$${n}`, and identifiers quoted by pg. Anything else is string-built SQL.
 */
const CONSTANT = [
  /^TASKS_CHANNEL$/,
  /^TIMERS_CHANNEL$/,
  /^FRAMES_CHANNEL$/,
  /^TOKENS_CHANNEL$/,
  /^[A-Z][A-Z_]*_SQL$/,
  /^w\.sql$/,
  /^pg\.escapeIdentifier\(\w+\)$/,
];

/** Reviewed per file: fragments built only from code constants (a table alias, a sort order from booleans). */
const REVIEWED: Record<string, RegExp[]> = {
  'runtime/camunda/store/fetch.ts': [
    /^filterSql\('[a-z]'\)$/,
    /^order$/,
    /^order\.replaceAll\('t\.', 'l\.'\)$/,
    /^i$/,
    /^FILTERS_CTE$/,
    /^lockMsSql\(\)$/,
    /^NO_FLOW_LIMIT_SQL\('\$\d'\)$/,
    /^order\('[a-z]+'\)$/,
    /^lockPickedSql\(\)$/,
    /^answerSql\(order\)$/,
    // the per-topic or the wide pick, and what the per-topic one released
    /^pickSql$/,
    /^releasedSql$/,
    /^answerSql\(order, releasedSql\)$/,
  ],
  'runtime/store/tasks.ts': [
    /^NO_FLOW_LIMIT_SQL\('\$\d'\)$/,
    /^ORDER_SQL\[order\]\('[a-z]+'\)$/,
    /^lockPickedSql\(FRAMED_(HERE|BY_TRIGGER)_SQL\)$/,
    /^framedSql$/,
    // the per-topic or the wide pick and their answers (perTopicPickSql, widePickSql, answerOrCoveredSql)
    /^pickSql$/,
    /^answerSql$/,
    /^appendHeadsCte\('[a-z_, :()]+'\)$/,
    /^releasedSql$/,
  ],
  // the columns of a part, the (instance, step) pairs, the answer's source, the optional
  // columns of a delivery and of framing: placeholders and fragments written in the file
  'runtime/store/transition-statement.ts': [
    /^columns$/,
    /^named$/,
    /^pairs$/,
    /^from$/,
    /^framed \? ', ' \+ framed : ''$/,
    /^framed \? ', framed' : ''$/,
    /^lock \? ', attempt' : ''$/,
    /^lock \? ' \|\| ' \+ lockExpiryData\('y'\) \+ ', y\.attempt' : ''$/,
    /^lock\?\.(columns|named) \?\? ''$/,
    /^delivering \? ' \|\| ' \+ lockExpiryData\('f'\) : ''$/,
  ],
  // appendHeadsCte's rows: a select list and a source written by its callers
  'runtime/store/frames.ts': [/^rows$/],
  // limitedPickSql's options are placeholders ('$1') and fragments its two callers build from constants.
  'runtime/store/flow-limits.ts': [/^topicsParam$/, /^o\.(resources|topics|maxTasks|candidates)$/, /^o\.order\('[a-z]+'\)$/],
  // sort keys from TASK_SORT_SQL with asc or desc, chosen by a request but written in the file
  'runtime/camunda/store/user-task-queries.ts': [/^orderSql$/],
  'runtime/camunda/store/process-queries.ts': [/^orderSql$/],
  'runtime/camunda/store/history-queries.ts': [/^orderSql$/],
  'runtime/camunda/store/external-task-log.ts': [/^orderSql$/],
  'runtime/camunda/store/deployments.ts': [/^orderSql$/],
  // whereGiven's param(): it answers the next placeholder ($n) and keeps the value
  'runtime/store/queries.ts': [/^param\(f\.\w+\)$/],
  // LISTEN takes no placeholder: the channel's name, quoted as an identifier
  'runtime/store/channel-listener.ts': [/^pg\.escapeIdentifier\(this\.opts\.channel\)$/],
  // the next pages' cursor condition (AFTER_CURSOR_SQL) or nothing
  'runtime/store/retention.ts': [/^cursorSql$/],
  // openTasksSql: column lists and states written in the file, the where() clauses (placeholders only)
  'runtime/camunda/store/queries.ts': [
    /^columns$/,
    /^from$/,
    /^state$/,
    /^whereSql$/,
    /^openTasksSql\(q, '[a-z_.*, ]+', w\.sql\)$/,
  ],
};

describe('SQL', () => {
  it('is never built from strings: template literals with SQL interpolate only known constants', () => {
    const found: string[] = [];
    for (const file of files(path.join(root, 'runtime'), '.ts')) {
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(/`(?:\\.|[^`\\])*`/g)) {
        const literal = m[0];
        if (!SQL.test(literal)) continue;
        for (const i of literal.matchAll(/(\$?)\$\{([^}]*)\}/g)) {
          if (i[1] === '$') continue; // $${n}: a numbered placeholder
          const expr = (i[2] ?? '').trim();
          const reviewed = REVIEWED[path.relative(root, file)] ?? [];
          if (![...CONSTANT, ...reviewed].some((re) => re.test(expr)))
            found.push(`${path.relative(root, file)}: \${${expr}} in ${literal.slice(0, 80).replace(/\s+/g, ' ')}…`);
        }
      }
    }
    expect(found).toEqual([]);
  });

  it('the check itself catches string-built SQL', () => {
    const literal = "`select * from instances where id = '${id}'`";
    expect(SQL.test(literal)).toBe(true);
    expect(CONSTANT.some((re) => re.test('id'))).toBe(false);
  });
});

/**
 * Schema files no client sends: named as answers by the operation tables (and never as a body
 * or query), the documents' error schema, and files only such answers refer to.
 */
function answerOnlySchemas(dir: string, operations: readonly Operation[]): Set<string> {
  const sent = new Set(operations.flatMap((o) => [o.body, o.query]).filter((n): n is string => n !== undefined));
  const answers = new Set(
    operations
      .flatMap((o) => Object.values(o.responses).map((r) => r.schema))
      .filter((n): n is string => typeof n === 'string' && !sent.has(n)),
  );
  answers.add('error');
  const referrers = new Map<string, Set<string>>();
  for (const file of files(dir, '.schema.json')) {
    const name = path.basename(file, '.schema.json');
    for (const m of readFileSync(file, 'utf8').matchAll(/"\$ref":\s*"(?:[^"#]*\/)?([\w-]+)\.schema\.json/g))
      if (m[1] !== name) (referrers.get(m[1]!) ?? referrers.set(m[1]!, new Set()).get(m[1]!)!).add(name);
  }
  for (let grown = true; grown;) {
    grown = false;
    for (const [name, from] of referrers)
      if (!answers.has(name) && !sent.has(name) && [...from].every((r) => answers.has(r))) {
        answers.add(name);
        grown = true;
      }
  }
  return answers;
}

// Walks a schema; yields the JSON pointer of every string without maxLength, enum, const or format.
function* unboundedStrings(node: unknown, at: string): Generator<string> {
  if (!node || typeof node !== 'object') return;
  const s = node as Record<string, unknown>;
  const isString = s.type === 'string' || (Array.isArray(s.type) && s.type.includes('string'));
  if (isString && s.maxLength === undefined && s.enum === undefined && s.const === undefined && s.format === undefined) yield at;
  for (const [k, v] of Object.entries(s)) yield* unboundedStrings(v, `${at}/${k}`);
}

/**
 * Known exceptions. XML is bounded by the body limit and BATON_MAX_BPMN_ELEMENTS. The Camunda
 * ones are bounded by the Camunda JSON limit only and are reported to that API's owner
 * (schemas/camunda is theirs): bound them, then drop them here.
 */
const EXEMPT = new Set([
  'schemas/api/deploy-request.schema.json#/properties/xml',
  'schemas/api/diagram-lint-request.schema.json#/properties/xml',
  'schemas/api/diagram-update-request.schema.json#/definitions/xml',
  'schemas/camunda/common.schema.json#/$defs/stringList/items',
  'schemas/camunda/message-request.schema.json#/properties/processInstanceId',
  'schemas/camunda/signal-request.schema.json#/properties/executionId',
]);

describe('schemas', () => {
  it('bound every string a client sends (names, keys, ids, messages), in schemas/api and schemas/camunda', () => {
    const found: string[] = [];
    for (const [dir, operations] of [
      ['schemas/api', OPERATIONS],
      ['schemas/camunda', CAMUNDA_OPERATIONS],
    ] as const) {
      const answers = answerOnlySchemas(path.join(root, dir), operations);
      for (const file of files(path.join(root, dir), '.schema.json')) {
        if (answers.has(path.basename(file, '.schema.json'))) continue;
        for (const p of unboundedStrings(JSON.parse(readFileSync(file, 'utf8')), '')) {
          const where = `${path.relative(root, file)}#${p}`;
          if (!EXEMPT.has(where)) found.push(where);
        }
      }
    }
    expect(found).toEqual([]);
  });
});
