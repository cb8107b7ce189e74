// Diagram drafts of the designer: name + current XML, saved without deploying.
import type { Queryable } from './db.ts';

export interface DiagramRow {
  id: string;
  name: string;
  xml: string;
  created_at: Date;
  updated_at: Date;
}

export type DiagramSummaryRow = Omit<DiagramRow, 'xml'>;

export async function insertDiagram(db: Queryable, p: { name: string; xml: string }): Promise<DiagramRow> {
  const { rows } = await db.query<DiagramRow>('insert into diagrams (name, xml) values ($1, $2) returning *', [p.name, p.xml]);
  return rows[0] as DiagramRow;
}

/** Newest change first. */
export async function listDiagrams(db: Queryable): Promise<DiagramSummaryRow[]> {
  const { rows } = await db.query<DiagramSummaryRow>(
    'select id, name, created_at, updated_at from diagrams order by updated_at desc, id',
  );
  return rows;
}

export async function findDiagram(db: Queryable, id: string): Promise<DiagramRow | undefined> {
  const { rows } = await db.query<DiagramRow>('select * from diagrams where id = $1', [id]);
  return rows[0];
}

/** Renames and/or replaces the XML; a missing field keeps its value. Undefined when no such diagram. */
export async function updateDiagram(
  db: Queryable,
  id: string,
  p: { name?: string; xml?: string },
): Promise<DiagramRow | undefined> {
  const { rows } = await db.query<DiagramRow>(
    `update diagrams set name = coalesce($2, name), xml = coalesce($3, xml), updated_at = now()
      where id = $1 returning *`,
    [id, p.name ?? null, p.xml ?? null],
  );
  return rows[0];
}

/** True when a row was deleted. */
export async function deleteDiagram(db: Queryable, id: string): Promise<boolean> {
  const { rowCount } = await db.query('delete from diagrams where id = $1', [id]);
  return (rowCount ?? 0) > 0;
}

export interface HeatmapSample {
  /** instance counts by status */
  instances: Record<string, number>;
  /** per element id, step counts by status */
  elements: Record<string, Record<string, number>>;
  /** instances counted: all of them when fewer than the limit */
  size: number;
  /** when the oldest instance counted started; null when none was */
  since: Date | null;
}

/**
 * The heatmap of a definition key (optionally one version): per-step and per-instance
 * status counts over its `limit` newest instances, read through instances_definition_idx
 * (migration 0019), or for one version through instances_version_idx (migration 0035). Counting every instance ever started would grow with history, and the
 * designer asks again every 2 s while a definition is open. Run it with the pool's
 * settings (db.ts), not withPlannerDefaults: with three million steps and a limit of 10,000,
 * the defaults read every step (a hash join, 780 ms) rather than those of the instances
 * counted (290 ms, and 20-40 ms for 1,000). A completion kept from an earlier loop pass
 * (`<step>@<pass>`, engine/loop-passes.ts) counts for its step.
 */
export async function sampleHeatmap(
  db: Queryable,
  key: string,
  version: number | undefined,
  limit: number,
): Promise<HeatmapSample> {
  const { rows } = await db.query<HeatmapSample>(
    `with recent as materialized (
      (select id, status, created_at from instances
        where definition_key = $1 and $2::int is null
        order by created_at desc, id desc limit $3)
       union all
      (select id, status, created_at from instances
        where definition_id = (select d.id from definitions d where d.key = $1 and d.version = $2::int)
        order by created_at desc, id desc limit $3)),
     step_counts as (
       select c.step_id, jsonb_object_agg(c.status, c.count) as counts
         from (select split_part(s.step_id, '@', 1) as step_id, s.status, count(*)::int as count
                 from recent r join steps s on s.instance_id = r.id group by 1, 2) c
        group by c.step_id)
     select (select coalesce(jsonb_object_agg(status, count), '{}') from (select status, count(*)::int as count from recent group by status) c) as instances,
            (select coalesce(jsonb_object_agg(step_id, counts), '{}') from step_counts) as elements,
            (select count(*)::int from recent) as size,
            (select min(created_at) from recent) as since`,
    [key, version ?? null, limit],
  );
  return rows[0] as HeatmapSample;
}
