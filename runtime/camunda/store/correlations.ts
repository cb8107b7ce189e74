// Camunda 7 message correlation (POST /engine-rest/message): the message subscriptions whose
// instances match the request, found and locked in one statement.
import type { Queryable } from '../../store/db.ts';
import type { SubscriptionRow } from '../../store/waits.ts';
import type { CamundaType } from './variables.ts';

/** A process variable every matching instance holds, with this value and Camunda type. */
export interface CorrelationKey {
  name: string;
  /** the value as stored in instances.variables */
  value: unknown;
  /** 'Null' matches a null value of any type, as Camunda's variable queries do */
  type: CamundaType;
}

export interface CorrelationFilter {
  messageName: string;
  businessKey: string | null;
  instanceId: string | null;
  keys: CorrelationKey[];
}

export type LockCorrelatedResult =
  | { ok: true; subscriptions: SubscriptionRow[] }
  /** a matching instance is held by another transition: roll back and try again */
  | { ok: false; reason: 'busy' };

// The type GET /process-instance/{id}/variables answers for variable k.name of instance i: the
// type row written with its current value, else the type inferred from its JSON as
// camunda/api/variables.ts inferType infers it.
const CURRENT_TYPE_SQL = `coalesce(
    (select cv.type from camunda_variables cv
      where cv.instance_id = i.id and cv.name = k.name and cv.value_md5 = md5((i.variables -> k.name)::text)),
    case jsonb_typeof(i.variables -> k.name)
      when 'string' then 'String' when 'boolean' then 'Boolean' when 'null' then 'Null'
      when 'number' then case when (i.variables -> k.name)::numeric % 1 <> 0 then 'Double'
                              when abs((i.variables -> k.name)::numeric) < 2147483648 then 'Integer' else 'Long' end
      else 'Json' end)`;

// A waiting message subscription of instance i that the request matches. The values compare
// as JSON (jsonb containment of the keys' object: for the primitive values a key may hold,
// equality of each named variable, a missing variable never matching); the types as
// Camunda's queries compare them: a Long 42 does not match an Integer 42, a String "42" no number.
const MATCH_SQL = `s.kind = 'message' and s.name = $1 and s.generation = i.generation
    and ($2::text is null or i.business_key = $2)
    and ($3::uuid is null or i.id = $3)
    and i.variables @> $4::jsonb
    and not exists (select 1 from unnest($5::text[], $6::text[]) as k(name, type)
                     where k.type <> 'Null' and k.type is distinct from ${CURRENT_TYPE_SQL})`;

/**
 * Locks the instances of every message subscription the request matches and answers those
 * subscriptions in instance order (the order every statement that writes several instances
 * takes). It never waits: an instance another transition holds is skipped, and then the
 * answer is 'busy' (the caller holds the message-name lock, which that transition may want).
 * `held` locks the subscriptions too, so a subscription deleted or a variable changed by a
 * transition that committed after the statement began is re-checked on its latest row and
 * dropped; `seen`, the same match unlocked, counts what was dropped or skipped, and either
 * answers 'busy': the retry's new snapshot decides. The answer is one row, a count and an
 * array, so that no join of the two grows with the square of the matches (`all` may reach
 * thousands). Every subscription of the name is read (no index covers the variables), as
 * Camunda's own correlation query reads every execution subscribed to it.
 */
export async function lockCorrelatedSubscriptions(db: Queryable, f: CorrelationFilter): Promise<LockCorrelatedResult> {
  const { rows } = await db.query<{ seen: number; held: SubscriptionRow[] }>({
    name: 'camunda_lock_correlated_subscriptions',
    text: `with seen as (
             select s.id from subscriptions s join instances i on i.id = s.instance_id where ${MATCH_SQL}
           ), held as materialized (
             select s.id, s.instance_id, s.step_id, s.generation, s.kind, s.name, s.correlation_key, s.created_at
               from subscriptions s join instances i on i.id = s.instance_id where ${MATCH_SQL}
                for no key update of i skip locked for key share of s skip locked
           )
           select (select count(*)::int from seen) as seen,
                  coalesce((select jsonb_agg(jsonb_build_object('id', h.id, 'instance_id', h.instance_id, 'step_id', h.step_id,
                                               'generation', h.generation, 'kind', h.kind, 'name', h.name,
                                               'correlation_key', h.correlation_key)
                                            order by h.instance_id, h.created_at, h.id)
                              from held h), '[]') as held`,
    values: [
      f.messageName,
      f.businessKey,
      f.instanceId,
      JSON.stringify(Object.fromEntries(f.keys.map((k) => [k.name, k.value]))),
      f.keys.map((k) => k.name),
      f.keys.map((k) => k.type),
    ],
  });
  // `held` is part of `seen` (a locked row passed the same match first): fewer held is busy.
  const { seen = 0, held = [] } = rows[0] ?? {};
  return held.length < seen ? { ok: false, reason: 'busy' } : { ok: true, subscriptions: held };
}
