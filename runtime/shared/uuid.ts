// Ids of instances, tasks and definitions are uuids: text of any other shape names no row.
import { v7 } from 'uuid';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(id: string): boolean {
  return UUID.test(id);
}

/**
 * A new instance's id: a version 7 uuid (RFC 9562), its first 48 bits the time in
 * milliseconds. The instance id leads the keys of instances, steps, flows, events, frames and
 * the task and timer look-ups, so time-ordered ids put each new instance's rows at the right
 * edge of those indexes, next to the last instance's, where random (version 4) ids put them
 * on a random page of each: after a checkpoint, every such page's first change writes the
 * whole page to the WAL, and the pages of a large history seldom stay cached
 * (docs/PERFORMANCE.md, "Time-ordered ids"). Lock tokens stay random.
 */
export function newInstanceId(): string {
  return v7();
}

/**
 * A new task's id, time-ordered for the same reason: the task key outgrows the cache as the
 * history grows. The database's default for the ids it makes is the same (time_ordered_uuid(),
 * migration 0041).
 */
export function newTaskId(): string {
  return v7();
}
