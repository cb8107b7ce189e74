// Input/output mappings of service tasks against a real PostgreSQL, in both dialects: the
// worker sees the inputs as the task's local variables, they do not leak into the process,
// outputs decide what of the result reaches it; an input that fails is an io_mapping incident
// whose retry creates the task, an output that fails refuses the complete and keeps the lock.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBpmn, type IoMappings } from '../../support/bpmn.ts';
import { complete, deploy, fetchOne, fetchTasks, start, waitForStatus, type LockedTask } from '../../support/flows.ts';
import { startTestServer, waitFor, type TestServer } from '../../support/server.ts';

let t: TestServer;

/** start -> work (camunda:inputOutput) -> after -> end */
function camundaBpmn(id: string, io: IoMappings): string {
  return buildBpmn(
    id,
    [
      { id: 'start', type: 'startEvent' },
      { id: 'work', type: 'serviceTask', topic: `${id}-work`, io },
      { id: 'after', type: 'serviceTask', topic: `${id}-after` },
      { id: 'end', type: 'endEvent' },
    ],
    [
      { from: 'start', to: 'work' },
      { from: 'work', to: 'after' },
      { from: 'after', to: 'end' },
    ],
  );
}

/** start -> work (zeebe:ioMapping) -> after -> end */
function zeebeBpmn(id: string, mappings: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="D_${id}" targetNamespace="https://baton.dev/test">
  <bpmn:process id="${id}" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:serviceTask id="work"><bpmn:extensionElements>
      <zeebe:taskDefinition type="${id}-work" /><zeebe:ioMapping>${mappings}</zeebe:ioMapping>
    </bpmn:extensionElements></bpmn:serviceTask>
    <bpmn:serviceTask id="after"><bpmn:extensionElements><zeebe:taskDefinition type="${id}-after" /></bpmn:extensionElements></bpmn:serviceTask>
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="work" />
    <bpmn:sequenceFlow id="f2" sourceRef="work" targetRef="after" />
    <bpmn:sequenceFlow id="f3" sourceRef="after" targetRef="end" />
  </bpmn:process>
</bpmn:definitions>`;
}

beforeAll(async () => {
  t = await startTestServer();
  await deploy(
    t.api,
    camundaBpmn('io_in', {
      inputs: [
        ['amount', '${order.total}'],
        ['currency', 'EUR'],
      ],
    }),
  );
  await deploy(
    t.api,
    camundaBpmn('io_out', {
      inputs: [['copy', '${a}']],
      outputs: [
        ['paid', '${status == "ok"}'],
        ['copied', '${copy}'],
      ],
    }),
  );
  await deploy(
    t.api,
    zeebeBpmn(
      'io_zeebe',
      `<zeebe:input source="=customer.name" target="sender" /><zeebe:input source="EUR" target="currency" />
       <zeebe:output source="=status" target="order.status" />`,
    ),
  );
  await deploy(t.api, zeebeBpmn('io_bad_in', '<zeebe:input source="=2 in (1..limit)" target="inRange" />'));
  await deploy(t.api, zeebeBpmn('io_bad_out', '<zeebe:output source="=2 in (1..limit)" target="inRange" />'));
  await deploy(
    t.api,
    buildBpmn(
      'io_mi',
      [
        { id: 'start', type: 'startEvent' },
        {
          id: 'work',
          type: 'serviceTask',
          topic: 'io_mi-work',
          multiInstance: { collection: 'people', elementVariable: 'person', outputCollection: 'greetings' },
          io: { inputs: [['who', '${person.name}']], outputs: [['greeting', '${text}']] },
        },
        { id: 'end', type: 'endEvent' },
      ],
      [
        { from: 'start', to: 'work' },
        { from: 'work', to: 'end' },
      ],
    ),
  );
});
afterAll(async () => {
  await t.close();
});

describe('input/output mappings, Camunda 7 dialect', () => {
  it('given inputs, then the worker sees them, and a result variable named like an input stays on the task', async () => {
    const id = await start(t.api, 'io_in', { variables: { order: { total: 5 } } });
    const task = await fetchOne(t.api, 'w', 'io_in-work');
    expect(task.variables).toEqual({ order: { total: 5 }, amount: 5, currency: 'EUR' });
    expect((await complete(t.api, task, 'w', { amount: 99, status: 'ok' })).status).toBe(204);
    const next = await fetchOne(t.api, 'w', 'io_in-after');
    expect(next.instanceId).toBe(id);
    expect(next.variables).toEqual({ order: { total: 5 }, status: 'ok' });
    await complete(t.api, next, 'w');
    expect((await waitForStatus(t.api, id, 'completed')).variables).toEqual({ order: { total: 5 }, status: 'ok' });
  });

  it('given outputs, then only their targets reach the process, read over the process, the inputs and the result', async () => {
    const id = await start(t.api, 'io_out', { variables: { a: 'A' } });
    const task = await fetchOne(t.api, 'w', 'io_out-work');
    expect(task.variables).toEqual({ a: 'A', copy: 'A' });
    expect((await complete(t.api, task, 'w', { status: 'ok', junk: 1 })).status).toBe(204);
    const next = await fetchOne(t.api, 'w', 'io_out-after');
    expect(next.instanceId).toBe(id);
    expect(next.variables).toEqual({ a: 'A', paid: true, copied: 'A' });
  });

  it('given a complete-batch of tasks with inputs, then their locals do not leak either', async () => {
    const ids = await Promise.all([1, 2].map((n) => start(t.api, 'io_in', { variables: { order: { total: n } } })));
    const tasks = await waitFor(
      async () => {
        const got = await fetchTasks(t.api, 'wb', ['io_in-work'], { maxTasks: 2 });
        return got.length === 2 ? got : undefined;
      },
      10_000,
      'two tasks',
    );
    const res = await t.api.post('/api/external-tasks/complete-batch', {
      workerId: 'wb',
      tasks: tasks.map((task) => ({
        id: task.id,
        lockToken: task.lockToken,
        variables: { amount: 0, seen: task.variables.amount },
      })),
    });
    expect(res.body.results.map((r: { result: string }) => r.result)).toEqual(['completed', 'completed']);
    const nexts = [await fetchOne(t.api, 'wb', 'io_in-after'), await fetchOne(t.api, 'wb', 'io_in-after')];
    expect(nexts.map((n) => n.instanceId).sort()).toEqual([...ids].sort());
    for (const next of nexts) {
      expect(Object.keys(next.variables).sort()).toEqual(['order', 'seen']);
      expect(next.variables.seen).toBe((next.variables.order as { total: number }).total);
    }
  });

  it('given a multi-instance task, then each element sees its own inputs and its outputs make its result', async () => {
    const id = await start(t.api, 'io_mi', { variables: { people: [{ name: 'ann' }, { name: 'bob' }] } });
    const elements: LockedTask[] = [await fetchOne(t.api, 'w', 'io_mi-work'), await fetchOne(t.api, 'w', 'io_mi-work')];
    const byName = Object.fromEntries(elements.map((e) => [e.variables.who as string, e]));
    expect(byName.ann?.variables).toMatchObject({ person: { name: 'ann' }, who: 'ann', loopCounter: 0 });
    expect(byName.bob?.variables).toMatchObject({ person: { name: 'bob' }, who: 'bob', loopCounter: 1 });
    await complete(t.api, byName.bob!, 'w', { text: 'hi bob', extra: 1 });
    await complete(t.api, byName.ann!, 'w', { text: 'hi ann', extra: 1 });
    const done = await waitForStatus(t.api, id, 'completed');
    expect(done.variables).toEqual({
      people: [{ name: 'ann' }, { name: 'bob' }],
      greetings: [{ greeting: 'hi ann' }, { greeting: 'hi bob' }],
    });
  });
});

describe('input/output mappings, Camunda 8 dialect', () => {
  it('given FEEL and literal inputs and a nested output, then the worker sees the inputs and the output updates the object', async () => {
    const id = await start(t.api, 'io_zeebe', { variables: { customer: { name: 'ann' }, order: { id: 7 } } });
    const task = await fetchOne(t.api, 'w', 'io_zeebe-work');
    expect(task.variables).toEqual({ customer: { name: 'ann' }, order: { id: 7 }, sender: 'ann', currency: 'EUR' });
    expect((await complete(t.api, task, 'w', { status: 'paid', sender: 'x' })).status).toBe(204);
    const next = await fetchOne(t.api, 'w', 'io_zeebe-after');
    expect(next.instanceId).toBe(id);
    expect(next.variables).toEqual({ customer: { name: 'ann' }, order: { id: 7, status: 'paid' } });
  });

  it('given an input that cannot be evaluated, then an io_mapping incident naming the step; its retry with the variable set creates the task', async () => {
    const id = await start(t.api, 'io_bad_in', { variables: { limit: 'a' } });
    const stuck = await waitForStatus(t.api, id, 'incident');
    expect(stuck.incidents).toEqual([
      expect.objectContaining({
        stepId: 'work',
        kind: 'io_mapping',
        message: expect.stringMatching(
          /^Input mapping of task work to inRange \("=2 in \(1\.\.limit\)"\) failed: .*retry the incident/,
        ),
      }),
    ]);
    expect(await fetchTasks(t.api, 'w', ['io_bad_in-work'])).toEqual([]);
    const retried = await t.api.post(`/api/incidents/${stuck.incidents[0].id}/retry`, { variables: { limit: 3 } });
    expect(retried.status).toBe(200);
    const task = await fetchOne(t.api, 'w', 'io_bad_in-work');
    expect(task).toMatchObject({ instanceId: id, variables: { limit: 3, inRange: true } });
  });

  it('given an output that cannot be evaluated, then the complete is refused with 400 and the task stays locked for its holder', async () => {
    const id = await start(t.api, 'io_bad_out');
    const task = await fetchOne(t.api, 'w', 'io_bad_out-work');
    const refused = await complete(t.api, task, 'w', { limit: 'a' });
    expect(refused.status).toBe(400);
    expect(refused.body.message).toMatch(/^Output mapping of task work to inRange .* The task stays locked/);
    expect((await waitForStatus(t.api, id, 'running')).variables).toEqual({});
    expect((await complete(t.api, task, 'w', { limit: 3 })).status).toBe(204);
    const next = await fetchOne(t.api, 'w', 'io_bad_out-after');
    expect(next.variables).toEqual({ inRange: true });
  });

  it('given outputs that write more than the result carried, then the variables limit applies to what they write', async () => {
    const small = await startTestServer({ limits: { maxVariablesBytes: 2_000 } });
    try {
      await deploy(small.api, zeebeBpmn('io_big', '<zeebe:output source="=[big, big, big]" target="copies" />'));
      const id = await start(small.api, 'io_big', { variables: { big: 'x'.repeat(600) } });
      const task = await fetchOne(small.api, 'w', 'io_big-work');
      const refused = await complete(small.api, task, 'w');
      expect(refused.status).toBe(413);
      expect((await waitForStatus(small.api, id, 'running')).variables).toEqual({ big: 'x'.repeat(600) });
    } finally {
      await small.close();
    }
  });
});

describe('input mappings in a loop', () => {
  const loopXml = (id: string, mapping: string) => `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="D_${id}" targetNamespace="https://baton.dev/test">
  <bpmn:process id="${id}" isExecutable="true">
    <bpmn:startEvent id="s" />
    <bpmn:serviceTask id="review"><bpmn:extensionElements>
      <zeebe:taskDefinition type="${id}-review" /><zeebe:ioMapping>${mapping}</zeebe:ioMapping>
    </bpmn:extensionElements></bpmn:serviceTask>
    <bpmn:exclusiveGateway id="decide" default="done" />
    <bpmn:endEvent id="e" />
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="review" />
    <bpmn:sequenceFlow id="f2" sourceRef="review" targetRef="decide" />
    <bpmn:sequenceFlow id="again" sourceRef="decide" targetRef="review"><bpmn:conditionExpression>=verdict = "again"</bpmn:conditionExpression></bpmn:sequenceFlow>
    <bpmn:sequenceFlow id="done" sourceRef="decide" targetRef="e" />
  </bpmn:process>
</bpmn:definitions>`;

  it('given a task in a loop, then each pass evaluates its inputs again, and they never reach the process', async () => {
    await deploy(t.api, loopXml('io_loop', '<zeebe:input source="=verdict" target="last" />'));
    const id = await start(t.api, 'io_loop');
    const first = await fetchOne(t.api, 'w', 'io_loop-review');
    expect(first.variables).toEqual({ last: null });
    await complete(t.api, first, 'w', { verdict: 'again' });
    const second = await fetchOne(t.api, 'w', 'io_loop-review');
    expect(second.variables).toEqual({ verdict: 'again', last: 'again' });
    await complete(t.api, second, 'w', { verdict: 'done' });
    expect((await waitForStatus(t.api, id, 'completed')).variables).toEqual({ verdict: 'done' });
  });

  it("given an input that fails on the second pass, then an incident; its retry creates that pass's task", async () => {
    await deploy(t.api, loopXml('io_loop_bad', '<zeebe:input source="=2 in (1..limit)" target="inRange" />'));
    const id = await start(t.api, 'io_loop_bad', { variables: { limit: 3 } });
    const first = await fetchOne(t.api, 'w', 'io_loop_bad-review');
    expect(first.variables.inRange).toBe(true);
    await complete(t.api, first, 'w', { verdict: 'again', limit: 'a' });
    const stuck = await waitForStatus(t.api, id, 'incident');
    expect(stuck.incidents).toEqual([expect.objectContaining({ stepId: 'review', kind: 'io_mapping' })]);
    expect((await t.api.post(`/api/incidents/${stuck.incidents[0].id}/retry`, { variables: { limit: 5 } })).status).toBe(200);
    const second = await fetchOne(t.api, 'w', 'io_loop_bad-review');
    expect(second.variables).toMatchObject({ inRange: true, limit: 5 });
    expect(second.id).not.toBe(first.id);
    await complete(t.api, second, 'w', { verdict: 'done' });
    expect((await waitForStatus(t.api, id, 'completed')).variables).toEqual({ verdict: 'done', limit: 5 });
  });
});

/** start -> work (a service task whose camunda:inputOutput holds `parameters`) -> after -> end */
function scriptedBpmn(id: string, parameters: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="D_${id}" targetNamespace="https://baton.dev/test">
  <bpmn:process id="${id}" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:serviceTask id="work" camunda:type="external" camunda:topic="${id}-work">
      <bpmn:extensionElements><camunda:inputOutput>${parameters}</camunda:inputOutput></bpmn:extensionElements>
    </bpmn:serviceTask>
    <bpmn:serviceTask id="after" camunda:type="external" camunda:topic="${id}-after" />
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="work" />
    <bpmn:sequenceFlow id="f2" sourceRef="work" targetRef="after" />
    <bpmn:sequenceFlow id="f3" sourceRef="after" targetRef="end" />
  </bpmn:process>
</bpmn:definitions>`;
}

const js = (body: string) => `<camunda:script scriptFormat="javascript"><![CDATA[${body}]]></camunda:script>`;

describe('JavaScript parameters (camunda:script)', () => {
  it('given a script input and a script output, then the worker sees the input, what the input script set reaches the process, and the output writes its value', async () => {
    await deploy(
      t.api,
      scriptedBpmn(
        'io_js',
        `<camunda:inputParameter name="limit">${js('execution.setVariable("defaultScore", 5);\nexecution.getVariable("amount") * 2')}</camunda:inputParameter>
        <camunda:outputParameter name="label">${js('"score " + score + " of " + limit')}</camunda:outputParameter>`,
      ),
    );
    const id = await start(t.api, 'io_js', { variables: { amount: 21 } });
    const work = await fetchOne(t.api, 'w', 'io_js-work');
    expect(work.variables).toMatchObject({ amount: 21, limit: 42, defaultScore: 5 });
    expect((await complete(t.api, work, 'w', { score: 7 })).status).toBe(204);
    const after = await fetchOne(t.api, 'w', 'io_js-after');
    expect(after.variables).toEqual({ amount: 21, defaultScore: 5, label: 'score 7 of 42' });
    expect((await complete(t.api, after, 'w')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');
  });

  it('given a script input that throws, then an io_mapping incident names the parameter and creates no task; its retry with the variable set creates it', async () => {
    await deploy(
      t.api,
      scriptedBpmn(
        'io_js_fail',
        `<camunda:inputParameter name="limit">${js('if (!customer) throw new Error("no customer"); customer.limit')}</camunda:inputParameter>`,
      ),
    );
    const id = await start(t.api, 'io_js_fail', { variables: { customer: null } });
    const stuck = await waitForStatus(t.api, id, 'incident');
    expect(stuck.incidents).toEqual([
      expect.objectContaining({
        stepId: 'work',
        kind: 'io_mapping',
        message: expect.stringContaining(
          'Input mapping of task work to limit ("if (!customer) throw new Error("no customer"); customer.limit") failed: the script threw Error: no customer',
        ),
      }),
    ]);
    expect(await fetchTasks(t.api, 'w', ['io_js_fail-work'])).toEqual([]);
    const retried = await t.api.post(`/api/incidents/${stuck.incidents[0].id}/retry`, {
      variables: { customer: { limit: 300 } },
    });
    expect(retried.status, JSON.stringify(retried.body)).toBe(200);
    const work = await fetchOne(t.api, 'w', 'io_js_fail-work');
    expect(work.variables).toMatchObject({ limit: 300 });
  });
});
