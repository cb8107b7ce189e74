// Open user tasks: subscriptions of kind 'user' (migration 0028), read for the tasklist and
// claimed or released by one guarded statement each.
import type { Logger } from 'pino';
import { listenToChannel, type ChannelListener } from './channel-listener.ts';
import type { UserTaskDetails } from '../model/effects.ts';
import type { Queryable } from './db.ts';

export interface UserTaskRow {
  id: string;
  instance_id: string;
  step_id: string;
  generation: number;
  scope_path: string;
  assignee: string | null;
  user_task: UserTaskDetails;
  /** an element of a multi-instance user task: its index and its own variables (element variable, loopCounter); else null */
  loop_index: number | null;
  local_variables: Record<string, unknown> | null;
  created_at: Date;
  /** created_at to the microsecond (a Date holds milliseconds), for cursors */
  created_us: string;
  definition_id: string;
  definition_key: string;
  business_key: string | null;
  /** its instance is suspended: every action on it is refused until the resume */
  suspended: boolean;
  /** the instance's variables: read for one task (findUserTask), which its form starts from */
  variables?: Record<string, unknown>;
}

export interface UserTaskFilter {
  assignee?: string;
  /** tasks this user may claim or work on: assigned to them, or open with them or one of `groups` among the candidates */
  candidateUser?: string;
  candidateGroups?: string[];
  instanceId?: string;
  definitionKey?: string;
  /** only tasks nobody holds */
  unassigned?: boolean;
  dueBefore?: string;
  dueAfter?: string;
  /** cursor: the last row of the page before (newest first), its creation time in microseconds since 1970 */
  after?: { createdUs: string; id: string };
  limit: number;
}

export async function findUserTask(db: Queryable, id: string): Promise<UserTaskRow | undefined> {
  const { rows } = await db.query<UserTaskRow>({
    name: 'find_user_task',
    text: `select s.id, s.instance_id, s.step_id, s.generation, s.scope_path, s.assignee, s.user_task, s.created_at, s.loop_index, s.local_variables,
                 (extract(epoch from s.created_at) * 1000000)::bigint::text as created_us,
                 i.definition_id, i.definition_key, i.business_key, i.suspended_at is not null as suspended, i.variables
            from subscriptions s join instances i on i.id = s.instance_id where s.id = $1 and s.kind = 'user'`,
    values: [id],
  });
  return rows[0];
}

/** Open user tasks, newest first, a page at a time. */
export async function listUserTasks(db: Queryable, f: UserTaskFilter): Promise<UserTaskRow[]> {
  const { rows } = await db.query<UserTaskRow>({
    name: 'list_user_tasks',
    text: `select s.id, s.instance_id, s.step_id, s.generation, s.scope_path, s.assignee, s.user_task, s.created_at, s.loop_index, s.local_variables,
                 (extract(epoch from s.created_at) * 1000000)::bigint::text as created_us,
                 i.definition_id, i.definition_key, i.business_key, i.suspended_at is not null as suspended from subscriptions s join instances i on i.id = s.instance_id
            where s.kind = 'user'
              and ($1::text is null or s.assignee = $1)
              and ($2::text is null or s.assignee = $2
                   or (s.assignee is null
                       and (s.user_task->'candidateUsers' ? $2 or s.user_task->'candidateGroups' ?| $3::text[])))
              and ($4::uuid is null or s.instance_id = $4)
              and ($5::text is null or i.definition_key = $5)
              and (not $6::boolean or s.assignee is null)
              and ($7::timestamptz is null or (s.user_task->>'dueAt')::timestamptz < $7)
              and ($8::timestamptz is null or (s.user_task->>'dueAt')::timestamptz > $8)
              and ($9::bigint is null or (s.created_at, s.id) < (timestamptz 'epoch' + $9::bigint * interval '1 microsecond', $10::uuid))
            order by s.created_at desc, s.id desc
            limit $11`,
    values: [
      f.assignee ?? null,
      f.candidateUser ?? null,
      f.candidateGroups ?? [],
      f.instanceId ?? null,
      f.definitionKey ?? null,
      f.unassigned === true,
      f.dueBefore ?? null,
      f.dueAfter ?? null,
      f.after?.createdUs ?? null,
      f.after?.id ?? null,
      f.limit,
    ],
  });
  return rows;
}

export type ClaimResult = { ok: true; task: UserTaskRow } | { ok: false; reason: 'not_found' | 'held'; assignee?: string };

/**
 * Sets the task's holder: `userId` takes a task nobody holds (or holds it already); `override`
 * (an assignment by an operator) takes it from whoever holds it. Null releases it.
 */
export async function setUserTaskAssignee(
  db: Queryable,
  id: string,
  userId: string | null,
  mode: 'claim' | 'override',
): Promise<ClaimResult> {
  const { rowCount } = await db.query({
    name: 'set_user_task_assignee',
    text: `update subscriptions set assignee = $2
            where id = $1 and kind = 'user' and ($3::boolean or assignee is null or assignee = $2)`,
    values: [id, userId, mode === 'override'],
  });
  const task = await findUserTask(db, id);
  if (!task) return { ok: false, reason: 'not_found' };
  if (!rowCount) return { ok: false, reason: 'held', ...(task.assignee ? { assignee: task.assignee } : {}) };
  return { ok: true, task };
}

/** Announces each user task created, changing hands or ended (migration 0029), with its id, instance and change. */
export const USER_TASKS_CHANNEL = 'baton_user_tasks';

/** Hears USER_TASKS_CHANNEL; rejects when the database cannot be reached at all. */
export function watchUserTaskChanges(connectionString: string, log: Logger): Promise<ChannelListener> {
  return listenToChannel(connectionString, { channel: USER_TASKS_CHANNEL, application: 'baton-user-task-changes' }, log);
}
