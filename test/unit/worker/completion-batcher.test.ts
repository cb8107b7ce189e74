// createCompletionBatcher's handling of the batch call's answer, with a scripted HTTP
// client (pure logic: no server): listed tasks take their listed result, anything the
// answer does not settle is sent again with the single complete.
import { describe, expect, it } from 'vitest';
import type { CallOutcome, HttpClient } from '../../../runtime/worker/http.ts';
import { createCompletionBatcher } from '../../../runtime/worker/task-calls.ts';

function scripted(batchAnswer: CallOutcome<unknown>) {
  const calls: string[] = [];
  const http: HttpClient = {
    async post<T>(path: string) {
      calls.push(path);
      return (path.endsWith('complete-batch') ? batchAnswer : { kind: 'ok', status: 204, body: undefined }) as CallOutcome<T>;
    },
    async put(path: string) {
      throw new Error(`the batcher does not PUT (${path})`);
    },
    close() {},
  };
  const log = { info() {}, warn() {}, error() {}, debug() {} };
  return { calls, batcher: createCompletionBatcher({ http, log, callTimeoutMs: 1_000 }) };
}

const holder = (n: number) => ({ taskId: `t${n}`, workerId: 'w', lockToken: `k${n}` });
const opts = { attempts: 2, signal: new AbortController().signal };

describe('completion batcher', () => {
  it('given an answer that lists one task of two, then that one takes its result and the other is completed on its own', async () => {
    const { calls, batcher } = scripted({ kind: 'ok', status: 200, body: { results: [{ id: 't1', result: 'lock_lost' }] } });
    const results = await Promise.all([batcher.complete(holder(1), {}, opts), batcher.complete(holder(2), {}, opts)]);
    expect(results).toEqual([{ kind: 'lock_lost', afterRetry: false }, { kind: 'applied' }]);
    expect(calls).toEqual(['/api/external-tasks/complete-batch', '/api/external-tasks/t2/complete']);
  });

  it('given an answer without results, then every task is completed on its own', async () => {
    const { calls, batcher } = scripted({ kind: 'ok', status: 200, body: {} });
    const results = await Promise.all([batcher.complete(holder(1), {}, opts), batcher.complete(holder(2), {}, opts)]);
    expect(results).toEqual([{ kind: 'applied' }, { kind: 'applied' }]);
    expect(calls.slice(1).sort()).toEqual(['/api/external-tasks/t1/complete', '/api/external-tasks/t2/complete']);
  });

  it('given a server without the batch route, then later completes are not batched', async () => {
    const { calls, batcher } = scripted({ kind: 'refused', status: 404, type: 'NotFound', message: 'no route' });
    await Promise.all([batcher.complete(holder(1), {}, opts), batcher.complete(holder(2), {}, opts)]);
    await Promise.all([batcher.complete(holder(3), {}, opts), batcher.complete(holder(4), {}, opts)]);
    expect(calls.filter((c) => c.endsWith('complete-batch'))).toHaveLength(1);
    expect(calls.filter((c) => /\/t\d\/complete$/.test(c))).toHaveLength(4);
  });
});
