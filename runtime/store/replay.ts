// Store side of an operator replay (runtime/engine/replay.ts): the reset of the
// step and flow rows that run again, and the generation bump.
import type { Queryable } from './db.ts';

/**
 * Deletes the rows of every step and flow not kept, so the replay reaches them
 * again; kept rows (and their completion order) stay as they are.
 */
export async function resetForReplay(
  db: Queryable,
  p: { instanceId: string; keepSteps: string[]; keepFlows: string[] },
): Promise<void> {
  await db.query({
    name: 'reset_for_replay',
    text: `with s as (delete from steps where instance_id = $1 and step_id <> all($2::text[]))
           delete from flows where instance_id = $1 and flow_id <> all($3::text[])`,
    values: [p.instanceId, p.keepSteps, p.keepFlows],
  });
}

/** Moves the instance to its next generation; null when its generation changed meanwhile. */
export async function bumpGeneration(db: Queryable, instanceId: string, fromGeneration: number): Promise<number | null> {
  const { rows } = await db.query<{ generation: number }>({
    name: 'bump_generation',
    text: `update instances set generation = generation + 1, ended_at = null, updated_at = now()
            where id = $1 and generation = $2 returning generation`,
    values: [instanceId, fromGeneration],
  });
  return rows[0]?.generation ?? null;
}
