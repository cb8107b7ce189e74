// Property: no body, however hostile, gets a 5xx, crashes the server, or changes the
// database when it is refused. Short run here; `npm run fuzz` sets FUZZ_RUNS for a long one.
import fc from 'fast-check';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BACKGROUND_TABLES } from '../security/digest.ts';
import { singleTaskBpmn } from '../support/bpmn.ts';
import { deploy, fetchOne, start } from '../support/flows.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { anyBody, mutatedBody, runs, timeoutFor } from './mutate.ts';
import { QUERY_TARGETS, TARGETS, type FuzzIds } from './targets.ts';

let t: TestServer;
let ids: FuzzIds;
const fiveHundreds: string[] = [];

beforeAll(async () => {
  t = await startTestServer();
  await deploy(t.api, singleTaskBpmn('fz', 'fz-task'));
  const instanceId = await start(t.api, 'fz', { businessKey: 'fz-1' });
  const task = await fetchOne(t.api, 'holder', 'fz-task');
  ids = { taskId: task.id, lockToken: task.lockToken, instanceId };
});
afterAll(async () => {
  if (fiveHundreds.length) console.error(`5xx answers found by the fuzzer:\n${fiveHundreds.join('\n')}`);
  await t?.close();
});

// Every table's rows, except the late-result events a refused task call is documented to
// keep, and their frames (every event becomes a frame; the frame head's counter moves with them).
// A late result is its own transaction, so its frame is a run of its own.
const KEPT_LATE_RESULTS: Record<string, { columns?: string; filter?: string }> = {
  events: { filter: ` where kind <> 'task:late_result'` },
  frame_runs: { filter: ` where 'task:late_result' <> all(kinds)` },
  frame_heads: { columns: '(x.instance_id, x.generation, x.ended_at)' },
};

async function digest(): Promise<string> {
  const { rows: tables } = await t.db.pool.query<{ name: string }>(
    `select table_name as name from information_schema.tables
      where table_schema = 'public' and table_type = 'BASE TABLE' and table_name <> all($1) order by 1`,
    [BACKGROUND_TABLES],
  );
  const parts = await Promise.all(
    tables.map(async ({ name }) => {
      const { columns = 'x', filter = '' } = KEPT_LATE_RESULTS[name] ?? {};
      const { rows } = await t.db.pool.query<{ h: string }>(
        `select md5(coalesce(string_agg(${columns}::text, '|' order by ${columns}::text), '')) as h from ${pg.escapeIdentifier(name)} x${filter}`,
      );
      return `${name}:${rows[0]?.h ?? ''}`;
    }),
  );
  return parts.join(',');
}

// A long poll would hold the run: waits are cut to nothing.
function withoutWaits(body: unknown): unknown {
  if (body && typeof body === 'object' && !Array.isArray(body)) {
    const b = body as Record<string, unknown>;
    if ('waitMs' in b) b.waitMs = 0;
    if ('asyncResponseTimeout' in b) b.asyncResponseTimeout = 0;
  }
  return body;
}

async function send(method: string, path: string, raw: string | undefined): Promise<void> {
  const before = await digest();
  const res = await fetch(`${t.url}${path}`, {
    method,
    headers: raw === undefined ? {} : { 'content-type': 'application/json' },
    ...(raw === undefined ? {} : { body: raw }),
  });
  const text = await res.text();
  if (res.status >= 500) {
    fiveHundreds.push(`${res.status} ${method} ${path} ${raw ?? ''} -> ${text.slice(0, 200)}`);
    throw new Error(`${res.status} for ${method} ${path} with ${raw ?? '(no body)'}: ${text.slice(0, 200)}`);
  }
  if (res.status >= 400) {
    expect(JSON.parse(text), `${method} ${path}`).toHaveProperty('type');
    expect(await digest(), `refused ${method} ${path} ${raw} changed the database`).toBe(before);
  }
}

describe('fuzzing the JSON endpoints', () => {
  it(
    'mutated valid bodies: never 5xx, refused ones change nothing',
    async () => {
      const target = fc.constantFrom(...TARGETS).chain((tg) => mutatedBody(tg.valid(ids)).map((body) => ({ tg, body })));
      await fc.assert(
        fc.asyncProperty(target, async ({ tg, body }) => {
          const raw = JSON.stringify(withoutWaits(body));
          await send(tg.method, tg.path(ids), raw);
        }),
        { numRuns: runs(60), endOnFailure: true },
      );
    },
    timeoutFor(runs(60), 300),
  );

  it(
    'random bodies: never 5xx, refused ones change nothing',
    async () => {
      await fc.assert(
        fc.asyncProperty(fc.constantFrom(...TARGETS), anyBody, async (tg, { raw }) => {
          let body = raw;
          try {
            body = JSON.stringify(withoutWaits(JSON.parse(raw)));
          } catch {
            // not JSON: sent as it is
          }
          await send(tg.method, tg.path(ids), body);
        }),
        { numRuns: runs(60), endOnFailure: true },
      );
    },
    timeoutFor(runs(60), 300),
  );

  it(
    'mutated query strings: never 5xx',
    async () => {
      const q = fc.constantFrom(...QUERY_TARGETS).chain((tg) => mutatedBody(tg.valid).map((query) => ({ tg, query })));
      await fc.assert(
        fc.asyncProperty(q, async ({ tg, query }) => {
          const params = new URLSearchParams();
          for (const [k, v] of Object.entries(query as Record<string, unknown>))
            params.append(k, typeof v === 'string' ? v : (JSON.stringify(v) ?? ''));
          await send('GET', `${tg.path(ids)}?${params.toString()}`, undefined);
        }),
        { numRuns: runs(30), endOnFailure: true },
      );
    },
    timeoutFor(runs(30), 300),
  );

  it('the server still answers after the run', async () => {
    expect((await t.api.get('/healthz')).status).toBe(200);
  });
});
