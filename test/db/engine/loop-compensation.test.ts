// Compensation of steps inside a loop against a real PostgreSQL, through the HTTP API: a
// compensation thrown after the loop undoes the step of every pass, newest pass first, each
// handler task in its pass's scope; a failing step with onExhausted compensate does the same.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBpmn } from '../../support/bpmn.ts';
import { complete, deploy, fetchOne, fetchTasks, instanceOf, start, waitForStatus } from '../../support/flows.ts';
import { startTestServer, type TestServer } from '../../support/server.ts';

let t: TestServer;

/** s -> book (compensated by unbook) -> decide -(more)-> book; -(done)-> `finish` */
function bookings(key: string, finish: 'throw' | 'pay'): string {
  return buildBpmn(
    key,
    [
      { id: 's', type: 'startEvent' },
      { id: 'book', type: 'serviceTask', topic: `${key}-book` },
      { id: 'undo', type: 'compensationBoundary', attachedTo: 'book', handler: 'unbook' },
      { id: 'unbook', type: 'serviceTask', topic: `${key}-unbook`, forCompensation: true },
      { id: 'decide', type: 'exclusiveGateway', default: 'done' },
      finish === 'throw'
        ? { id: 'finish', type: 'compensationThrow' }
        : { id: 'finish', type: 'serviceTask', topic: `${key}-pay`, retries: 1, onExhausted: 'compensate' },
      { id: 'e', type: 'endEvent' },
    ],
    [
      { from: 's', to: 'book' },
      { from: 'book', to: 'decide' },
      { id: 'more', from: 'decide', to: 'book', condition: '=more = true' },
      { id: 'done', from: 'decide', to: 'finish' },
      { from: 'finish', to: 'e' },
    ],
  );
}

async function ok(res: Promise<{ status: number; body: unknown }>): Promise<void> {
  const answer = await res;
  expect(answer.status, JSON.stringify(answer.body)).toBe(204);
}

/** Books three times (passes 1-3), each with its own seat. */
async function bookThrice(key: string): Promise<void> {
  for (const [seat, more] of [
    ['A', true],
    ['B', true],
    ['C', false],
  ] as const)
    await ok(complete(t.api, await fetchOne(t.api, 'w', `${key}-book`), 'w', { seat, more }));
}

/** Completes the handler tasks one at a time; answers the pass each ran in. */
async function unbookAll(key: string): Promise<(string | undefined)[]> {
  const passes: (string | undefined)[] = [];
  for (let i = 0; i < 3; i++) {
    const task = await fetchOne(t.api, 'w', `${key}-unbook`);
    // One handler at a time: the next waits for this one.
    expect(await fetchTasks(t.api, 'w', [`${key}-unbook`])).toEqual([]);
    passes.push(task.scopePath);
    await ok(complete(t.api, task, 'w'));
  }
  return passes;
}

beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t?.close();
});

describe('compensation inside a loop', () => {
  it('given a step booked in three passes, then a compensation after the loop undoes each pass, newest first', async () => {
    await deploy(t.api, bookings('lcomp', 'throw'));
    const id = await start(t.api, 'lcomp');
    await bookThrice('lcomp');
    expect(await unbookAll('lcomp')).toEqual(['/loop:book#3', '/loop:book#2', '/loop:book#1']);
    await waitForStatus(t.api, id, 'completed');
    const history = (await t.api.get(`/api/instances/${id}/history?limit=1000`)).body.items as {
      kind: string;
      stepId?: string;
    }[];
    expect(history.filter((e) => e.kind === 'compensation:completed').map((e) => e.stepId)).toEqual([
      'book',
      'book@/loop:book#2',
      'book@/loop:book#1',
    ]);
  });

  it('given a saga after the loop, then the failed step compensates every pass and the instance ends compensated', async () => {
    await deploy(t.api, bookings('lsaga', 'pay'));
    const id = await start(t.api, 'lsaga');
    await bookThrice('lsaga');
    const pay = await fetchOne(t.api, 'w', 'lsaga-pay');
    const failed = await t.api.post(`/api/external-tasks/${pay.id}/failure`, {
      workerId: 'w',
      lockToken: pay.lockToken,
      errorMessage: 'card declined',
      retries: 0,
    });
    expect(failed.status, JSON.stringify(failed.body)).toBeLessThan(300);
    expect(await unbookAll('lsaga')).toEqual(['/loop:book#3', '/loop:book#2', '/loop:book#1']);
    const ended = await waitForStatus(t.api, id, 'compensated');
    // The view names each kept completion's step and the pass it completed in.
    const compensated = (ended.steps as { stepId: string; status: string; scopePath?: string }[]).filter(
      (s) => s.status === 'compensated',
    );
    expect(compensated.map((s) => [s.stepId, s.scopePath]).sort()).toEqual([
      ['book', undefined],
      ['book', '/loop:book#1'],
      ['book', '/loop:book#2'],
    ]);
    expect((await instanceOf(t.api, id)).status).toBe('compensated');
  });
});
