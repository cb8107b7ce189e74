// Loop markers (standardLoopCharacteristics) against a real PostgreSQL, through the HTTP API: the
// activity runs once per pass while loopCondition holds (it reads loopCounter), up to
// loopMaximum; testBefore asks before the first pass; an interrupting boundary ends the loop; a
// condition that fails is an incident whose retry decides again. Neither Camunda 7 nor Zeebe
// runs the marker: Baton runs it as the BPMN specification says.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { complete, deploy, fetchOne, fetchTasks, instanceOf, start, waitForStatus } from '../../support/flows.ts';
import { startTestServer, type TestServer } from '../../support/server.ts';

let t: TestServer;

const NS = `xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:camunda="http://camunda.org/schema/1.0/bpmn"`;

/** start -> work (with `marker`) -> after -> end, `boundary` on work leading to `handled` */
function looped(id: string, marker: string, opts: { boundary?: string; work?: string } = {}): string {
  const work =
    opts.work ?? `<bpmn:serviceTask id="work" camunda:type="external" camunda:topic="${id}-work">${marker}</bpmn:serviceTask>`;
  const boundary = opts.boundary
    ? `<bpmn:boundaryEvent id="caught" attachedToRef="work">${opts.boundary}</bpmn:boundaryEvent>
       <bpmn:endEvent id="handled" /><bpmn:sequenceFlow id="b1" sourceRef="caught" targetRef="handled" />`
    : '';
  return `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions ${NS} id="D_${id}" targetNamespace="https://baton.dev/test">
  <bpmn:process id="${id}" isExecutable="true">
    <bpmn:startEvent id="start" />
    ${work}
    <bpmn:serviceTask id="after" camunda:type="external" camunda:topic="${id}-after" />
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="work" />
    <bpmn:sequenceFlow id="f2" sourceRef="work" targetRef="after" />
    <bpmn:sequenceFlow id="f3" sourceRef="after" targetRef="end" />
    ${boundary}
  </bpmn:process>
</bpmn:definitions>`;
}

const condition = (text: string, attributes = '') =>
  `<bpmn:standardLoopCharacteristics ${attributes}><bpmn:loopCondition xsi:type="bpmn:tFormalExpression">${text}</bpmn:loopCondition></bpmn:standardLoopCharacteristics>`;

async function runPasses(id: string, topic: string, results: Record<string, unknown>[]): Promise<number[]> {
  const counters: number[] = [];
  for (const result of results) {
    const task = await fetchOne(t.api, 'w', topic);
    expect(task.instanceId).toBe(id);
    counters.push(task.variables.loopCounter as number);
    expect((await complete(t.api, task, 'w', result)).status).toBe(204);
  }
  return counters;
}

beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t?.close();
});

describe('loop markers', () => {
  it('given loopCondition "loopCounter < 3", then the task runs three passes, each with its loopCounter, and the token moves on once', async () => {
    await deploy(t.api, looped('sl_count', condition('= loopCounter &lt; 3')));
    const id = await start(t.api, 'sl_count');
    expect(await runPasses(id, 'sl_count-work', [{}, {}, {}])).toEqual([1, 2, 3]);
    const after = await fetchOne(t.api, 'w', 'sl_count-after');
    expect(await fetchTasks(t.api, 'w', ['sl_count-work', 'sl_count-after'])).toEqual([]);
    expect((await complete(t.api, after, 'w')).status).toBe(204);
    const done = await waitForStatus(t.api, id, 'completed');
    expect(done.steps.find((s: any) => s.stepId === 'loop:work')).toMatchObject({ status: 'completed', pass: 3 });
    expect(done.variables).toEqual({}); // loopCounter is the task's own
  });

  it('given a condition over a variable the worker sets and loopMaximum 5, then the loop stops when the condition fails, or at the maximum', async () => {
    await deploy(t.api, looped('sl_until', condition('${!approved}', 'loopMaximum="5"')));
    const a = await start(t.api, 'sl_until');
    await runPasses(a, 'sl_until-work', [{ approved: false }, { approved: true }]);
    expect((await fetchOne(t.api, 'w', 'sl_until-after')).instanceId).toBe(a);
    const b = await start(t.api, 'sl_until');
    expect(await runPasses(b, 'sl_until-work', Array(5).fill({ approved: false }))).toEqual([1, 2, 3, 4, 5]);
    expect((await fetchOne(t.api, 'w', 'sl_until-after')).instanceId).toBe(b);
  });

  it('given testBefore and a condition false at the start, then the task never runs and the token moves on', async () => {
    await deploy(t.api, looped('sl_before', condition('= go', 'testBefore="true"')));
    const id = await start(t.api, 'sl_before', { variables: { go: false } });
    const after = await fetchOne(t.api, 'w', 'sl_before-after');
    expect(after.instanceId).toBe(id);
    const i = await instanceOf(t.api, id);
    expect(i.steps.find((s: any) => s.stepId === 'work').status).toBe('skipped');
  });

  it('given an interrupting timer on the looping task, then it ends the loop and its path runs', async () => {
    await deploy(
      t.api,
      looped('sl_timer', condition('= true'), {
        boundary: '<bpmn:timerEventDefinition><bpmn:timeDuration>PT0.3S</bpmn:timeDuration></bpmn:timerEventDefinition>',
      }),
    );
    const id = await start(t.api, 'sl_timer');
    await runPasses(id, 'sl_timer-work', [{}]);
    const done = await waitForStatus(t.api, id, 'completed');
    expect(done.steps.find((s: any) => s.stepId === 'caught').status).toBe('completed');
    expect(done.steps.find((s: any) => s.stepId === 'after').status).toBe('skipped');
  });

  it('given a condition that cannot be evaluated, then the loop waits in an incident, and its retry decides again', async () => {
    await deploy(t.api, looped('sl_bad', condition('= 2 in (1..limit)')));
    const id = await start(t.api, 'sl_bad', { variables: { limit: 'x' } });
    await runPasses(id, 'sl_bad-work', [{}]);
    const stuck = await waitForStatus(t.api, id, 'incident');
    expect(stuck.incidents).toMatchObject([{ stepId: 'loop:work', kind: 'condition_error' }]);
    const retried = await t.api.post(`/api/incidents/${stuck.incidents[0].id}/retry`, { variables: { limit: 1 } });
    expect(retried.status).toBeLessThan(300);
    expect((await fetchOne(t.api, 'w', 'sl_bad-after')).instanceId).toBe(id);
  });

  it('given a subprocess with a loop marker, then its inner tasks run once per pass', async () => {
    const work = `<bpmn:subProcess id="work">${condition('= loopCounter &lt; 2')}
      <bpmn:startEvent id="s_in" /><bpmn:serviceTask id="inner" camunda:type="external" camunda:topic="sl_sub-inner" />
      <bpmn:endEvent id="e_in" /><bpmn:sequenceFlow id="i1" sourceRef="s_in" targetRef="inner" />
      <bpmn:sequenceFlow id="i2" sourceRef="inner" targetRef="e_in" /></bpmn:subProcess>`;
    await deploy(t.api, looped('sl_sub', '', { work }));
    const id = await start(t.api, 'sl_sub');
    for (let pass = 1; pass <= 2; pass++) {
      const task = await fetchOne(t.api, 'w', 'sl_sub-inner');
      expect(task.scopePath).toBe(`/loop:work#${pass}`);
      expect((await complete(t.api, task, 'w')).status).toBe(204);
    }
    expect((await fetchOne(t.api, 'w', 'sl_sub-after')).instanceId).toBe(id);
  });
});
