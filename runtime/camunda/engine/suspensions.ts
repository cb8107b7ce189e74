// Camunda's synchronous suspend and activate of many instances (PUT /process-instance/suspended,
// PUT /process-definition/.../suspended). Each instance is its own transition and transaction,
// as a batch's are: a request holds one instance's lock at a time, never all of them, and one
// that fails part-way leaves the instances before it changed; the call is safe to repeat.
import type { Engine } from '../../engine/context.ts';
import { resumeInstance, suspendInstance } from '../../engine/suspension.ts';

export interface SuspendEachResult {
  /** instances whose state changed */
  changed: number;
  /** instances already in that state, or ended meanwhile */
  unchanged: number;
}

export async function setSuspensionOfEach(
  engine: Engine,
  p: { instanceIds: string[]; suspended: boolean; by?: string },
): Promise<SuspendEachResult> {
  const run = p.suspended ? suspendInstance : resumeInstance;
  const result: SuspendEachResult = { changed: 0, unchanged: 0 };
  for (const instanceId of p.instanceIds) {
    const r = await run(engine, { instanceId, ...(p.by ? { by: p.by } : {}) });
    if (r.ok && r.changed) result.changed++;
    else result.unchanged++;
  }
  return result;
}
