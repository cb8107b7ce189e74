// Definition rows: deployed, versioned BPMN with its compiled plan.
import type { Plan } from '../compiler/plan.ts';
import type { Queryable } from './db.ts';

export interface DefinitionRow {
  id: string;
  key: string;
  version: number;
  fingerprint: string;
  xml_sha256: string;
  xml: string;
  plan: Plan;
  deployed_at: Date;
  /** the deployment that created this version, and the name of the resource it came from */
  deployment_id: string;
  resource_name: string;
}

export type DefinitionSummary = Omit<DefinitionRow, 'xml' | 'plan'>;

export interface InsertDefinitionParams {
  key: string;
  fingerprint: string;
  xmlSha256: string;
  xml: string;
  plan: Plan;
  /** the deployment the new version belongs to: made on demand when the XML is new */
  deploymentId: string | (() => Promise<string>);
  resourceName: string;
  /** a new version even when this exact XML is deployed (Camunda's deploy without duplicate filtering) */
  always?: boolean;
}

/**
 * Deploys the next version of a key, or returns the newest version that already holds
 * this exact XML (unless `always`). The caller runs it in a transaction; the advisory lock
 * per key makes concurrent deploys of one key take versions one after another.
 */
export async function insertDefinition(
  db: Queryable,
  p: InsertDefinitionParams,
): Promise<{ created: boolean; definition: DefinitionRow }> {
  await db.query("select pg_advisory_xact_lock(hashtext('definition:' || $1))", [p.key]);
  if (!p.always) {
    const existing = await db.query<DefinitionRow>(
      'select * from definitions where key = $1 and xml_sha256 = $2 order by version desc limit 1',
      [p.key, p.xmlSha256],
    );
    if (existing.rows[0]) return { created: false, definition: existing.rows[0] };
  }
  const deploymentId = typeof p.deploymentId === 'string' ? p.deploymentId : await p.deploymentId();
  const { rows } = await db.query<DefinitionRow>(
    `insert into definitions (key, version, fingerprint, xml_sha256, xml, plan, deployment_id, resource_name)
     select $1, coalesce(max(version), 0) + 1, $2, $3, $4, $5, $6, $7 from definitions where key = $1
     returning *`,
    [p.key, p.fingerprint, p.xmlSha256, p.xml, p.plan, deploymentId, p.resourceName],
  );
  return { created: true, definition: rows[0] as DefinitionRow };
}

export async function findDefinitionById(db: Queryable, id: string): Promise<DefinitionRow | undefined> {
  const { rows } = await db.query<DefinitionRow>({
    name: 'find_definition_by_id',
    text: 'select * from definitions where id = $1',
    values: [id],
  });
  return rows[0];
}

/**
 * The newest version of `key`, or exactly `version`, or the newest whose process carries
 * `versionTag`, or the one deployed in the same deployment as the definition `besideId`.
 */
export async function findDefinition(
  db: Queryable,
  key: string,
  version?: number,
  versionTag?: string,
  besideId?: string,
): Promise<DefinitionRow | undefined> {
  const { rows } = await db.query<DefinitionRow>(
    `select * from definitions where key = $1 and ($2::int is null or version = $2)
        and ($3::text is null or plan->>'versionTag' = $3)
        and ($4::uuid is null or deployment_id = (select deployment_id from definitions where id = $4))
      order by version desc limit 1`,
    [key, version ?? null, versionTag ?? null, besideId ?? null],
  );
  return rows[0];
}

/** The latest version of every key, but the bodies of parallel subprocesses (they run only inside their process). */
export async function listLatestDefinitions(db: Queryable): Promise<DefinitionSummary[]> {
  const { rows } = await db.query<DefinitionSummary>(
    `select distinct on (key) id, key, version, fingerprint, xml_sha256, deployed_at
       from definitions where plan->'bodyOf' is null order by key, version desc`,
  );
  return rows;
}
