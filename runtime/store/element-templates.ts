// Element templates workers publish for their topics (migration 0021). A template id and
// version is written once: publishing the same JSON again changes nothing, other JSON under
// the same version is refused.
import type { Queryable } from './db.ts';

export interface ElementTemplateRow {
  template_id: string;
  version: number | null;
  dialect: 'camunda7' | 'zeebe';
  topic: string;
  template: Record<string, unknown>;
  published_at: Date;
  published_by: string | null;
}

export interface PublishTemplateParams {
  templateId: string;
  version: number | null;
  dialect: ElementTemplateRow['dialect'];
  topic: string;
  template: Record<string, unknown>;
  publishedBy: string | null;
}

export type PublishTemplateResult =
  | { ok: true; created: boolean; row: ElementTemplateRow }
  /** the id and version hold other JSON (jsonb equality: key order and spacing do not count) */
  | { ok: false; reason: 'changed'; row: ElementTemplateRow };

export async function publishElementTemplate(db: Queryable, p: PublishTemplateParams): Promise<PublishTemplateResult> {
  const { rows } = await db.query<ElementTemplateRow>({
    name: 'publish_element_template',
    text: `insert into element_templates (template_id, version, dialect, topic, template, published_by)
           values ($1, $2, $3, $4, $5::jsonb, $6)
           on conflict (template_id, coalesce(version, -1)) do nothing
           returning *`,
    values: [p.templateId, p.version, p.dialect, p.topic, JSON.stringify(p.template), p.publishedBy],
  });
  if (rows[0]) return { ok: true, created: true, row: rows[0] };
  // Miss path, a new statement: it sees the row a concurrent publisher committed while the insert waited.
  const { rows: found } = await db.query<ElementTemplateRow & { same: boolean }>({
    name: 'find_published_element_template',
    text: `select *, template = $3::jsonb as same from element_templates
            where template_id = $1 and coalesce(version, -1) = coalesce($2::int, -1)`,
    values: [p.templateId, p.version, JSON.stringify(p.template)],
  });
  const existing = found[0];
  if (!existing) throw new Error(`element template ${p.templateId} conflicted on insert and then was not found`);
  const { same, ...row } = existing;
  return same ? { ok: true, created: false, row } : { ok: false, reason: 'changed', row };
}

/** The highest version of each template (a template without a version counts below version 0), by template id. */
export async function listLatestElementTemplates(db: Queryable, topic?: string): Promise<ElementTemplateRow[]> {
  const { rows } = await db.query<ElementTemplateRow>({
    name: 'list_latest_element_templates',
    text: `select * from (
             select distinct on (template_id) * from element_templates
              order by template_id, coalesce(version, -1) desc
           ) latest
            where $1::text is null or topic = $1
            order by template_id`,
    values: [topic ?? null],
  });
  return rows;
}

/** Of the given topics, those some template binds (any version). */
export async function topicsWithTemplates(db: Queryable, topics: string[]): Promise<Set<string>> {
  const { rows } = await db.query<{ topic: string }>({
    name: 'topics_with_element_templates',
    text: 'select distinct topic from element_templates where topic = any($1::text[])',
    values: [topics],
  });
  return new Set(rows.map((r) => r.topic));
}
