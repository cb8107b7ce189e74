// Single-flight reads of frames: followers of one instance that stand at the same
// seq when a notification rings (the common case: many viewers of one run) share one
// query instead of sending one each.
import type { Pool } from '../store/db.ts';
import { readFrames, type FrameRow } from '../store/frames.ts';

export interface FrameQuery {
  instanceId: string;
  generation: number;
  afterSeq: number;
  limit: number;
}

export type FrameReader = (q: FrameQuery) => Promise<FrameRow[]>;

export function sharedFrameReader(pool: Pool): FrameReader {
  const inFlight = new Map<string, Promise<FrameRow[]>>();
  return (q) => {
    const key = `${q.instanceId}/${q.generation}/${q.afterSeq}/${q.limit}`;
    let read = inFlight.get(key);
    if (!read) {
      read = readFrames(pool, q).finally(() => inFlight.delete(key));
      inFlight.set(key, read);
    }
    return read;
  };
}
