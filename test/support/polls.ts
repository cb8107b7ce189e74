// A native long poll driven in-process (engine/fetch.ts fetchAndWait), for the delivery tests:
// its answer, whether it has answered, and an abort standing for the caller leaving.
import type { Engine } from '../../runtime/engine/context.ts';
import { fetchAndWait } from '../../runtime/engine/fetch.ts';
import type { ParkedPolls } from '../../runtime/engine/parked-polls.ts';
import type { LockedTaskRow } from '../../runtime/store/tasks.ts';

export interface Poll {
  answer: Promise<LockedTaskRow[]>;
  settled: () => boolean;
  abort: AbortController;
}

export function parkPoll(
  on: { engine: Engine; parkedPolls: ParkedPolls },
  workerId: string,
  topic: string,
  opts: { waitMs?: number; maxTasks?: number } = {},
): Poll {
  const abort = new AbortController();
  let done = false;
  const answer = fetchAndWait(on.engine, on.parkedPolls, {
    workerId,
    maxTasks: opts.maxTasks ?? 1,
    waitMs: opts.waitMs ?? 20_000,
    topics: [{ name: topic, lockDurationMs: 45_000 }],
    signal: abort.signal,
  }).finally(() => {
    done = true;
  });
  return { answer, settled: () => done, abort };
}
