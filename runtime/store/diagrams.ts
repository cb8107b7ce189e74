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
  const { rows } = await db.query<DiagramRow>(
    'insert into diagrams (name, xml) values ($1, $2) returning *',
    [p.name, p.xml],
  );
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
export async function updateDiagram(db: Queryable, id: string, p: { name?: string; xml?: string }): Promise<DiagramRow | undefined> {
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

export interface StepCountRow {
  step_id: string;
  status: string;
  count: number;
}

/** Per-step status counts over every instance of a definition key (optionally one version): the heatmap. */
export async function countStepsByStatus(db: Queryable, key: string, version?: number): Promise<StepCountRow[]> {
  const { rows } = await db.query<StepCountRow>(
    `select s.step_id, s.status, count(*)::int as count
       from steps s join instances i on i.id = s.instance_id
      where i.definition_key = $1 and ($2::int is null or i.definition_version = $2)
      group by s.step_id, s.status order by s.step_id, s.status`,
    [key, version ?? null],
  );
  return rows;
}

/** Instance counts by status of a definition key (optionally one version). */
export async function countInstancesByStatus(db: Queryable, key: string, version?: number): Promise<{ status: string; count: number }[]> {
  const { rows } = await db.query<{ status: string; count: number }>(
    `select status, count(*)::int as count from instances
      where definition_key = $1 and ($2::int is null or definition_version = $2)
      group by status order by status`,
    [key, version ?? null],
  );
  return rows;
}
