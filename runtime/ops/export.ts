// `baton export --before DATE`: history of ended instances as JSON lines, one instance
// per line with its events, oldest first — run it before retention deletes them.
import type { Writable } from 'node:stream';
import type { Queryable } from '../store/db.ts';
import { listEndedInstancesWithHistory } from '../store/retention.ts';

const PAGE = 200;

/** Writes one JSON line per instance; answers how many. */
export async function exportHistory(db: Queryable, before: Date, out: Writable): Promise<number> {
  let after: { endedAt: string; id: string } | undefined;
  let count = 0;
  for (;;) {
    const rows = await listEndedInstancesWithHistory(db, { before, limit: PAGE, ...(after ? { after } : {}) });
    for (const { cursor_at: _c, ...row } of rows) {
      const line = JSON.stringify({
        id: row.id,
        definitionKey: row.definition_key,
        version: row.definition_version,
        businessKey: row.business_key,
        status: row.status,
        variables: row.variables,
        createdAt: row.created_at,
        endedAt: row.ended_at,
        events: row.events,
      });
      if (!out.write(`${line}\n`)) await new Promise((r) => out.once('drain', r));
    }
    count += rows.length;
    const last = rows[rows.length - 1];
    if (!last || rows.length < PAGE) return count;
    after = { endedAt: last.cursor_at, id: last.id };
  }
}
