// Camunda type metadata of variables (migration 0003). Native variables stay plain
// JSON on the instance row; a row here says "the value with this md5 was written by a
// Camunda client as <type>", so it stops applying once anyone writes another value.
import type { InstanceStatus } from '../../model/vocabulary.ts';
import type { Queryable } from '../../store/db.ts';

export const CamundaType = {
  String: 'String',
  Integer: 'Integer',
  Short: 'Short',
  Long: 'Long',
  Double: 'Double',
  Boolean: 'Boolean',
  /** native value: ISO-8601 UTC string */
  Date: 'Date',
  /** native value: the parsed JSON */
  Json: 'Json',
  Xml: 'Xml',
  Null: 'Null',
  /** native value: the serialized text as sent; valueInfo keeps objectTypeName and format */
  Object: 'Object',
  /** native value: a descriptor; the bytes are kept in content */
  Bytes: 'Bytes',
  /** native value: a descriptor; the bytes are kept in content, served by the /data routes */
  File: 'File',
} as const;
export type CamundaType = (typeof CamundaType)[keyof typeof CamundaType];

export interface TypedWrite {
  name: string;
  /** the value as stored in instances.variables */
  nativeValue: unknown;
  type: CamundaType;
  valueInfo: Record<string, unknown>;
  content: Buffer | null;
}

export interface StoredType {
  name: string;
  type: CamundaType;
  value_info: Record<string, unknown>;
  /** only for Bytes (sent inline); File contents are loaded on request */
  content: Buffer | null;
}

/** Records the Camunda types of values being written; run in the transaction that writes the values. */
export async function writeVariableTypes(db: Queryable, instanceId: string, writes: TypedWrite[]): Promise<void> {
  if (writes.length === 0) return;
  await db.query({
    name: 'write_camunda_variable_types',
    text: `insert into camunda_variables (instance_id, name, value_md5, type, value_info, content)
           select $1, x.name, md5(x.value::jsonb::text), x.type, x.info, x.content
             from unnest($2::text[], $3::text[], $4::text[], $5::jsonb[], $6::bytea[]) as x(name, value, type, info, content)
           on conflict (instance_id, name, value_md5)
           do update set type = excluded.type, value_info = excluded.value_info, content = excluded.content, written_at = now()`,
    values: [
      instanceId,
      writes.map((w) => w.name),
      writes.map((w) => JSON.stringify(w.nativeValue ?? null)),
      writes.map((w) => w.type),
      writes.map((w) => w.valueInfo),
      writes.map((w) => w.content),
    ],
  });
}

/** The SQL fragment that lists the types still matching the current values of instance `i`. */
export const MATCHING_TYPES_SQL = `coalesce((select jsonb_agg(jsonb_build_object(
      'name', cv.name, 'type', cv.type, 'value_info', cv.value_info,
      'content', case when cv.type = 'Bytes' then encode(cv.content, 'base64') end))
    from camunda_variables cv
   where cv.instance_id = i.id and cv.value_md5 = md5((i.variables -> cv.name)::text)), '[]'::jsonb)`;

interface RawType {
  name: string;
  type: CamundaType;
  value_info: Record<string, unknown>;
  content: string | null;
}

/** Turns the jsonb of MATCHING_TYPES_SQL into rows. */
export function decodeTypes(raw: unknown): StoredType[] {
  return ((raw ?? []) as RawType[]).map((r) => ({ ...r, content: r.content === null ? null : Buffer.from(r.content, 'base64') }));
}

export interface InstanceVariables {
  id: string;
  status: InstanceStatus;
  definition_id: string;
  business_key: string | null;
  suspended_at: Date | null;
  variables: Record<string, unknown>;
  types: StoredType[];
}

/** Variables of an instance with their matching Camunda types, read in one statement. */
export async function loadInstanceVariables(db: Queryable, instanceId: string): Promise<InstanceVariables | undefined> {
  const { rows } = await db.query<Omit<InstanceVariables, 'types'> & { types: unknown }>({
    name: 'load_camunda_instance_variables',
    text: `select i.id, i.status, i.definition_id, i.business_key, i.suspended_at, i.variables, ${MATCHING_TYPES_SQL} as types from instances i where i.id = $1`,
    values: [instanceId],
  });
  const row = rows[0];
  return row ? { ...row, types: decodeTypes(row.types) } : undefined;
}

export interface VariableContent {
  type: CamundaType;
  value_info: Record<string, unknown>;
  content: Buffer | null;
}

/** The File/Bytes contents of a variable, if its current value was written with them. */
export async function loadVariableContent(db: Queryable, instanceId: string, name: string): Promise<VariableContent | undefined> {
  const { rows } = await db.query<VariableContent>({
    name: 'load_camunda_variable_content',
    text: `select cv.type, cv.value_info, cv.content from camunda_variables cv join instances i on i.id = cv.instance_id
            where cv.instance_id = $1 and cv.name = $2 and cv.value_md5 = md5((i.variables -> cv.name)::text)`,
    values: [instanceId, name],
  });
  return rows[0];
}
