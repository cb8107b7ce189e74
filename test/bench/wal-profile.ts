// `npx tsx test/bench/wal-profile.ts [instances] [history]`: where Baton's WAL bytes go. Runs
// one-task instances (start, fetch-and-lock, complete over HTTP) on a fresh embedded
// PostgreSQL after a CHECKPOINT, then reads the WAL written in between with
// pg_walinspect: bytes per relation (record data and full-page images) and per kind.
// `history`: completed instances with their tasks written first, as a server that keeps its
// history holds them, so the indexes are larger than the cache of pages changed since the
// checkpoint: where a new row's key falls among them decides how many whole pages are written.
import { rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import path from 'node:path';
import pg from 'pg';
import { pino } from 'pino';
import { startBatonServer } from '../../runtime/server.ts';
import { startEmbeddedPostgres } from '../../runtime/store/embedded.ts';
import { newInstanceId } from '../../runtime/shared/uuid.ts';

const instances = Number(process.argv[2] ?? 500);
const history = Number(process.argv[3] ?? 0);
const xml =
  `<?xml version="1.0" encoding="UTF-8"?><bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="D" targetNamespace="bench"><bpmn:process id="wal" isExecutable="true">` +
  `<bpmn:startEvent id="start"/><bpmn:serviceTask id="work" camunda:type="external" camunda:topic="wal"/><bpmn:endEvent id="end"/>` +
  `<bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="work"/><bpmn:sequenceFlow id="f2" sourceRef="work" targetRef="end"/></bpmn:process></bpmn:definitions>`;

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

async function post<T>(url: string, body: unknown): Promise<T> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${url} -> ${res.status} ${text}`);
  return (text ? JSON.parse(text) : undefined) as T;
}

async function main(): Promise<void> {
  const dir = path.resolve('.baton-bench-wal');
  const embedded = await startEmbeddedPostgres({ dataDir: dir, port: await freePort(), database: 'wal_profile' });
  const db = new pg.Client({ connectionString: embedded.url });
  const server = await startBatonServer({
    databaseUrl: embedded.url,
    port: 0,
    host: '127.0.0.1',
    log: pino({ level: 'silent' }),
  });
  try {
    await db.connect();
    await db.query('create extension if not exists pg_walinspect');
    await post(`${server.url}/api/definitions`, { xml });
    // warm-up, so the first-use writes (catalog, new pages) are not counted
    for (let i = 0; i < 20; i++) await runOne(server.url);
    if (history > 0) await writeHistory(db, history);
    await db.query('checkpoint');
    const {
      rows: [a],
    } = await db.query<{ lsn: string }>('select pg_current_wal_lsn()::text as lsn');
    for (let i = 0; i < instances; i++) await runOne(server.url);
    const {
      rows: [b],
    } = await db.query<{ lsn: string }>('select pg_current_wal_lsn()::text as lsn');
    const {
      rows: [total],
    } = await db.query<{ bytes: string }>('select pg_wal_lsn_diff($2, $1)::bigint::text as bytes', [a!.lsn, b!.lsn]);
    console.log(
      `${instances} one-task instances (start + fetch-and-lock + complete, one at a time)${history > 0 ? ` after ${history} in history` : ''}: ${total!.bytes} WAL bytes, ${Math.round(Number(total!.bytes) / instances)} per instance`,
    );
    const { rows: kinds } = await db.query(
      `select "resource_manager/record_type" as kind, sum(count)::int as records, sum(combined_size)::bigint as bytes, sum(fpi_size)::bigint as fpi_bytes
         from pg_get_wal_stats($1, $2, true) group by 1 having sum(count) > 0 order by 3 desc`,
      [a!.lsn, b!.lsn],
    );
    console.table(kinds.map((k) => ({ ...k, per_instance: Math.round(Number(k.bytes) / instances) })));
    const { rows: rels } = await db.query(
      `select coalesce(c.relname, w.relfilenode::text) as relation, count(*)::int as block_refs,
              sum(w.block_data_length)::bigint as data_bytes, sum(w.block_fpi_length)::bigint as fpi_bytes
         from pg_get_wal_block_info($1, $2) w left join pg_class c on c.relfilenode = w.relfilenode
        group by 1 order by sum(w.block_data_length + w.block_fpi_length) desc limit 30`,
      [a!.lsn, b!.lsn],
    );
    console.table(
      rels.map((r) => ({ ...r, per_instance: Math.round((Number(r.data_bytes) + Number(r.fpi_bytes)) / instances) })),
    );
    // Records by relation and kind: a record's header costs about as much as its data, so
    // the count of records (a row lock, an upsert's confirmation, an index entry) is what to cut.
    const { rows: records } = await db.query(
      `select coalesce(c.relname, w.relfilenode::text) as relation, w.record_type as kind, count(*)::int as records,
              sum(w.record_length)::bigint as record_bytes
         from pg_get_wal_block_info($1, $2) w left join pg_class c on c.relfilenode = w.relfilenode
        where w.block_id = 0
        group by 1, 2 order by 4 desc limit 40`,
      [a!.lsn, b!.lsn],
    );
    console.table(
      records.map((r) => ({
        ...r,
        per_instance: Math.round((Number(r.records) / instances) * 100) / 100,
        bytes_per_instance: Math.round(Number(r.record_bytes) / instances),
      })),
    );
  } finally {
    await server.close();
    await db.end();
    await embedded.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * `count` completed one-task instances and their tasks, copied from the warm-up's last one in
 * batches; every id comes from where the engine's come from (the instance's from Node, the
 * task's from its column's default).
 */
async function writeHistory(db: pg.Client, count: number): Promise<void> {
  const batch = 10_000;
  for (let done = 0; done < count; done += batch) {
    const n = Math.min(batch, count - done);
    const ids = Array.from({ length: n }, () => newInstanceId());
    await db.query(
      `with src as (select * from instances where status = 'completed' order by created_at desc limit 1),
            ins as (insert into instances (id, definition_id, definition_key, definition_version, status, variables, created_at, updated_at, ended_at)
                    select x.id, src.definition_id, src.definition_key, src.definition_version, 'completed', src.variables, now(), now(), now()
                      from src, unnest($1::uuid[]) as x(id)
                    returning id)
       insert into external_tasks (instance_id, step_id, generation, topic, state, retries, retries_left, idempotency_key, ended_at)
       select ins.id, 'work', 1, 'wal', 'done', 3, 3, ins.id::text || ':work', now() from ins`,
      [ids],
    );
  }
  await db.query('vacuum analyze instances, external_tasks');
}

async function runOne(url: string): Promise<void> {
  await post(`${url}/api/instances`, { definitionKey: 'wal' });
  const [task] = await post<{ id: string; lockToken: string }[]>(`${url}/api/external-tasks/fetch-and-lock`, {
    workerId: 'wal',
    maxTasks: 1,
    topics: [{ name: 'wal', lockDurationMs: 60_000 }],
  });
  if (!task) throw new Error('no task');
  await post(`${url}/api/external-tasks/${task.id}/complete`, { workerId: 'wal', lockToken: task.lockToken });
}

main().catch((err: Error) => {
  console.error(err);
  process.exit(1);
});
