// Input and output mappings of embedded subprocesses against a real PostgreSQL, in both
// dialects: the inputs are locals of the subprocess that every step inside reads, a write to a
// name the subprocess holds stays in it, other writes reach the process, the outputs say what
// leaves, and the locals end with the subprocess. A mapping that fails is an io_mapping incident
// on the subprocess whose retry evaluates it again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBpmn, type IoMappings } from '../../support/bpmn.ts';
import { complete, deployMappingsRun, fetchOne, fetchTasks, instanceOf, start, waitForStatus } from '../../support/flows.ts';
import { startTestServer, type TestServer } from '../../support/server.ts';

let t: TestServer;

/** start -> Sub(io: first -> check? -> second | skipped) -> after -> end */
function camundaBpmn(id: string, io: IoMappings): string {
  return buildBpmn(
    id,
    [
      { id: 'start', type: 'startEvent' },
      {
        id: 'Sub',
        type: 'subProcess',
        io,
        nodes: [
          { id: 'subStart', type: 'startEvent' },
          { id: 'first', type: 'serviceTask', topic: `${id}-first` },
          { id: 'check', type: 'exclusiveGateway', default: 'toSkip' },
          { id: 'second', type: 'serviceTask', topic: `${id}-second` },
          { id: 'subEnd', type: 'endEvent' },
        ],
        flows: [
          { from: 'subStart', to: 'first' },
          { from: 'first', to: 'check' },
          { from: 'check', to: 'second', condition: '${amount > 5}' },
          { id: 'toSkip', from: 'check', to: 'subEnd' },
          { from: 'second', to: 'subEnd' },
        ],
      },
      { id: 'after', type: 'serviceTask', topic: `${id}-after` },
      { id: 'end', type: 'endEvent' },
    ],
    [
      { from: 'start', to: 'Sub' },
      { from: 'Sub', to: 'after' },
      { from: 'after', to: 'end' },
    ],
  );
}

/** start -> Sub(zeebe:ioMapping: work) -> end */
function zeebeBpmn(id: string, mappings: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="D_${id}" targetNamespace="https://baton.dev/test">
  <bpmn:process id="${id}" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:subProcess id="Sub">
      <bpmn:extensionElements><zeebe:ioMapping>${mappings}</zeebe:ioMapping></bpmn:extensionElements>
      <bpmn:startEvent id="subStart" />
      <bpmn:serviceTask id="work"><bpmn:extensionElements><zeebe:taskDefinition type="${id}-work" /></bpmn:extensionElements></bpmn:serviceTask>
      <bpmn:endEvent id="subEnd" />
      <bpmn:sequenceFlow id="s1" sourceRef="subStart" targetRef="work" />
      <bpmn:sequenceFlow id="s2" sourceRef="work" targetRef="subEnd" />
    </bpmn:subProcess>
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="Sub" />
    <bpmn:sequenceFlow id="f2" sourceRef="Sub" targetRef="end" />
  </bpmn:process>
</bpmn:definitions>`;
}

const deployClean = (xml: string) => deployMappingsRun(t.api, xml);

/** start -> Sub(reply = "none"; answer = reply) { wait for message sub-reply -> look } -> end */
const messageBpmn = buildBpmn(
  'sub_io_msg',
  [
    { id: 'start', type: 'startEvent' },
    {
      id: 'Sub',
      type: 'subProcess',
      io: { inputs: [['reply', 'none']], outputs: [['answer', '${reply}']] },
      nodes: [
        { id: 'subStart', type: 'startEvent' },
        { id: 'wait', type: 'catchEvent', message: 'sub-reply' },
        { id: 'look', type: 'serviceTask', topic: 'sub_io_msg-look' },
        { id: 'subEnd', type: 'endEvent' },
      ],
      flows: [
        { from: 'subStart', to: 'wait' },
        { from: 'wait', to: 'look' },
        { from: 'look', to: 'subEnd' },
      ],
    },
    { id: 'end', type: 'endEvent' },
  ],
  [
    { from: 'start', to: 'Sub' },
    { from: 'Sub', to: 'end' },
  ],
);

/** start -> Outer(a, b; seenB = b) { Inner(a) { work } -> later } -> end, and a message boundary on Outer -> stopped */
const nestedBpmn = buildBpmn(
  'sub_io_nested',
  [
    { id: 'start', type: 'startEvent' },
    {
      id: 'Outer',
      type: 'subProcess',
      io: {
        inputs: [
          ['a', 'outer'],
          ['b', 'outer-b'],
        ],
        outputs: [['seenB', '${b}']],
      },
      nodes: [
        { id: 'outerStart', type: 'startEvent' },
        {
          id: 'Inner',
          type: 'subProcess',
          io: { inputs: [['a', 'inner']] },
          nodes: [
            { id: 'innerStart', type: 'startEvent' },
            { id: 'work', type: 'serviceTask', topic: 'sub_io_nested-work' },
            { id: 'innerEnd', type: 'endEvent' },
          ],
          flows: [
            { from: 'innerStart', to: 'work' },
            { from: 'work', to: 'innerEnd' },
          ],
        },
        { id: 'later', type: 'serviceTask', topic: 'sub_io_nested-later' },
        { id: 'outerEnd', type: 'endEvent' },
      ],
      flows: [
        { from: 'outerStart', to: 'Inner' },
        { from: 'Inner', to: 'later' },
        { from: 'later', to: 'outerEnd' },
      ],
    },
    { id: 'stop', type: 'boundaryEvent', attachedTo: 'Outer', message: 'sub-stop' },
    { id: 'stopped', type: 'serviceTask', topic: 'sub_io_nested-stopped' },
    { id: 'end', type: 'endEvent' },
    { id: 'stoppedEnd', type: 'endEvent' },
  ],
  [
    { from: 'start', to: 'Outer' },
    { from: 'Outer', to: 'end' },
    { from: 'stop', to: 'stopped' },
    { from: 'stopped', to: 'stoppedEnd' },
  ],
);

/** start -> Each (sequential multi-instance over items, with mappings) { work } -> end */
const sequentialBpmn = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="D_sub_io_each" targetNamespace="https://baton.dev/test">
  <bpmn:process id="sub_io_each" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:subProcess id="Each">
      <bpmn:extensionElements><zeebe:ioMapping>
        <zeebe:input source="=upper case(item)" target="label" />
        <zeebe:output source="=label" target="lastLabel" />
      </zeebe:ioMapping></bpmn:extensionElements>
      <bpmn:multiInstanceLoopCharacteristics isSequential="true"><bpmn:extensionElements>
        <zeebe:loopCharacteristics inputCollection="=items" inputElement="item" outputCollection="labels" outputElement="=label + &quot;!&quot;" />
      </bpmn:extensionElements></bpmn:multiInstanceLoopCharacteristics>
      <bpmn:startEvent id="eachStart" />
      <bpmn:serviceTask id="work"><bpmn:extensionElements><zeebe:taskDefinition type="sub_io_each-work" /></bpmn:extensionElements></bpmn:serviceTask>
      <bpmn:endEvent id="eachEnd" />
      <bpmn:sequenceFlow id="s1" sourceRef="eachStart" targetRef="work" />
      <bpmn:sequenceFlow id="s2" sourceRef="work" targetRef="eachEnd" />
    </bpmn:subProcess>
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="Each" />
    <bpmn:sequenceFlow id="f2" sourceRef="Each" targetRef="end" />
  </bpmn:process>
</bpmn:definitions>`;

/** start -> Sub(reason = "none"; why = reason) { work, with error boundary late (code into reason) -> handled } -> end */
const caughtBpmn = buildBpmn(
  'sub_io_caught',
  [
    { id: 'start', type: 'startEvent' },
    {
      id: 'Sub',
      type: 'subProcess',
      io: { inputs: [['reason', 'none']], outputs: [['why', '${reason}']] },
      nodes: [
        { id: 'subStart', type: 'startEvent' },
        { id: 'work', type: 'serviceTask', topic: 'sub_io_caught-work' },
        { id: 'late', type: 'boundaryEvent', attachedTo: 'work', error: { code: 'LATE', codeVariable: 'reason' } },
        { id: 'handled', type: 'serviceTask', topic: 'sub_io_caught-handled' },
        { id: 'subEnd', type: 'endEvent' },
        { id: 'handledEnd', type: 'endEvent' },
      ],
      flows: [
        { from: 'subStart', to: 'work' },
        { from: 'work', to: 'subEnd' },
        { from: 'late', to: 'handled' },
        { from: 'handled', to: 'handledEnd' },
      ],
    },
    { id: 'end', type: 'endEvent' },
  ],
  [
    { from: 'start', to: 'Sub' },
    { from: 'Sub', to: 'end' },
  ],
);

/** start -> Outer(labels = []; result = labels) { Each (sequential over items, outputCollection labels) { work } } -> end */
const collectedBpmn = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="D_sub_io_collected" targetNamespace="https://baton.dev/test">
  <bpmn:process id="sub_io_collected" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:subProcess id="Outer">
      <bpmn:extensionElements><zeebe:ioMapping>
        <zeebe:input source="=[]" target="labels" />
        <zeebe:output source="=labels" target="result" />
      </zeebe:ioMapping></bpmn:extensionElements>
      <bpmn:startEvent id="outerStart" />
      <bpmn:subProcess id="Each">
        <bpmn:multiInstanceLoopCharacteristics isSequential="true"><bpmn:extensionElements>
          <zeebe:loopCharacteristics inputCollection="=items" inputElement="item" outputCollection="labels" outputElement="=upper case(item)" />
        </bpmn:extensionElements></bpmn:multiInstanceLoopCharacteristics>
        <bpmn:startEvent id="eachStart" />
        <bpmn:serviceTask id="work"><bpmn:extensionElements><zeebe:taskDefinition type="sub_io_collected-work" /></bpmn:extensionElements></bpmn:serviceTask>
        <bpmn:endEvent id="eachEnd" />
        <bpmn:sequenceFlow id="s1" sourceRef="eachStart" targetRef="work" />
        <bpmn:sequenceFlow id="s2" sourceRef="work" targetRef="eachEnd" />
      </bpmn:subProcess>
      <bpmn:endEvent id="outerEnd" />
      <bpmn:sequenceFlow id="o1" sourceRef="outerStart" targetRef="Each" />
      <bpmn:sequenceFlow id="o2" sourceRef="Each" targetRef="outerEnd" />
    </bpmn:subProcess>
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="Outer" />
    <bpmn:sequenceFlow id="f2" sourceRef="Outer" targetRef="end" />
  </bpmn:process>
</bpmn:definitions>`;

beforeAll(async () => {
  t = await startTestServer();
  await deployClean(collectedBpmn);
  await deployClean(caughtBpmn);
  await deployClean(sequentialBpmn);
  await deployClean(messageBpmn);
  await deployClean(nestedBpmn);
  await deployClean(
    camundaBpmn('sub_io', {
      inputs: [
        ['amount', '${order.total}'],
        ['status', 'pending'],
      ],
      outputs: [['total', '${amount}']],
    }),
  );
  await deployClean(camundaBpmn('sub_io_in', { inputs: [['amount', '${order.total}']] }));
  await deployClean(
    zeebeBpmn(
      'sub_io_zeebe',
      `<zeebe:input source="=customer.name" target="sender" /><zeebe:input source="=2 in (1..limit)" target="inRange" />
       <zeebe:output source="=sender + &quot;!&quot;" target="greeting.text" />`,
    ),
  );
  await deployClean(zeebeBpmn('sub_io_bad_out', '<zeebe:output source="=2 in (1..limit)" target="inRange" />'));
  await deployClean(
    zeebeBpmn(
      'sub_io_bad_local',
      '<zeebe:input source="a" target="limit" /><zeebe:output source="=2 in (1..limit)" target="inRange" />',
    ),
  );
});
afterAll(async () => {
  await t.close();
});

describe('subprocess input and output mappings, Camunda 7 dialect', () => {
  it('given inputs and outputs, then the steps inside read the locals, writes to them stay inside, and only the outputs leave', async () => {
    const id = await start(t.api, 'sub_io', { variables: { order: { total: 5 }, status: 'new' } });
    const first = await fetchOne(t.api, 'w', 'sub_io-first');
    expect(first.instanceId).toBe(id);
    // The local status hides the process's while the subprocess runs.
    expect(first.variables).toEqual({ order: { total: 5 }, status: 'pending', amount: 5 });
    expect((await instanceOf(t.api, id)).variables).toEqual({ order: { total: 5 }, status: 'new' });

    // amount is the subprocess's: the write stays there and the gateway inside reads it; note reaches the process.
    expect((await complete(t.api, first, 'w', { amount: 7, note: 'checked' })).status).toBe(204);
    const second = await fetchOne(t.api, 'w', 'sub_io-second');
    expect(second.variables).toEqual({ order: { total: 5 }, status: 'pending', amount: 7, note: 'checked' });
    const running = await instanceOf(t.api, id);
    expect(running.variables).toEqual({ order: { total: 5 }, status: 'new', note: 'checked' });
    // The instance view shows the subprocess's locals on its step while it is open.
    expect(running.steps.find((s: { stepId: string }) => s.stepId === 'Sub')).toMatchObject({
      status: 'active',
      variables: { amount: 7, status: 'pending' },
    });

    // status is the subprocess's too: a worker inside cannot change the process's.
    expect((await complete(t.api, second, 'w', { status: 'done' })).status).toBe(204);
    const after = await fetchOne(t.api, 'w', 'sub_io-after');
    expect(after.variables).toEqual({ order: { total: 5 }, status: 'new', note: 'checked', total: 7 });
    await complete(t.api, after, 'w');
    expect((await waitForStatus(t.api, id, 'completed')).variables).toEqual({
      order: { total: 5 },
      status: 'new',
      note: 'checked',
      total: 7,
    });
  });

  it('given inputs only, then the locals end with the subprocess and nothing of them reaches the process', async () => {
    const id = await start(t.api, 'sub_io_in', { variables: { order: { total: 3 } } });
    const first = await fetchOne(t.api, 'w', 'sub_io_in-first');
    expect(first.variables).toEqual({ order: { total: 3 }, amount: 3 });
    // The gateway reads the local amount (3): the default flow skips the second task.
    await complete(t.api, first, 'w', { amount: 4 });
    const after = await fetchOne(t.api, 'w', 'sub_io_in-after');
    expect(after.instanceId).toBe(id);
    expect(after.variables).toEqual({ order: { total: 3 } });
    expect(await fetchTasks(t.api, 'w', ['sub_io_in-second'])).toEqual([]);
  });
});

describe('subprocess input and output mappings, Camunda 8 dialect', () => {
  it('given an input that cannot be evaluated, then an io_mapping incident on the subprocess and nothing inside runs; its retry enters it', async () => {
    const id = await start(t.api, 'sub_io_zeebe', { variables: { customer: { name: 'ann' }, limit: 'a' } });
    const stuck = await waitForStatus(t.api, id, 'incident');
    expect(stuck.incidents).toEqual([
      expect.objectContaining({
        stepId: 'Sub',
        kind: 'io_mapping',
        message: expect.stringMatching(
          /^Input mapping of subprocess Sub to inRange \("=2 in \(1\.\.limit\)"\) failed: .*retry the incident/,
        ),
      }),
    ]);
    expect(await fetchTasks(t.api, 'w', ['sub_io_zeebe-work'])).toEqual([]);
    const retried = await t.api.post(`/api/incidents/${stuck.incidents[0].id}/retry`, { variables: { limit: 3 } });
    expect(retried.status).toBe(200);
    const work = await fetchOne(t.api, 'w', 'sub_io_zeebe-work');
    expect(work).toMatchObject({
      instanceId: id,
      variables: { customer: { name: 'ann' }, limit: 3, sender: 'ann', inRange: true },
    });
    await complete(t.api, work, 'w', { sender: 'bob' });
    // The output reads the local the worker changed; a dotted target builds an object.
    expect((await waitForStatus(t.api, id, 'completed')).variables).toEqual({
      customer: { name: 'ann' },
      limit: 3,
      greeting: { text: 'bob!' },
    });
  });

  it('given an output that cannot be evaluated, then an io_mapping incident on the subprocess once its body ran; its retry completes it', async () => {
    const id = await start(t.api, 'sub_io_bad_out', { variables: { limit: 'a' } });
    const work = await fetchOne(t.api, 'w', 'sub_io_bad_out-work');
    await complete(t.api, work, 'w');
    const stuck = await waitForStatus(t.api, id, 'incident');
    expect(stuck.incidents).toEqual([
      expect.objectContaining({
        stepId: 'Sub',
        kind: 'io_mapping',
        message: expect.stringMatching(/^Output mapping of subprocess Sub to inRange .*retry the incident/),
      }),
    ]);
    const retried = await t.api.post(`/api/incidents/${stuck.incidents[0].id}/retry`, { variables: { limit: 3 } });
    expect(retried.status).toBe(200);
    const done = await waitForStatus(t.api, id, 'completed');
    expect(done.variables).toEqual({ limit: 3, inRange: true });
    // The body ran once: the retry ended the subprocess, it did not enter it again.
    expect(await fetchTasks(t.api, 'w', ['sub_io_bad_out-work'])).toEqual([]);
  });
});

describe('subprocess variables from other writers', () => {
  it("given a message inside the subprocess, then its payload sets the subprocess's local of that name and the rest on the process", async () => {
    const id = await start(t.api, 'sub_io_msg', { businessKey: `msg-${Date.now()}` });
    const bk = (await instanceOf(t.api, id)).businessKey;
    await waitForStatus(t.api, id, 'running');
    const sent = await t.api.post('/api/messages', {
      name: 'sub-reply',
      correlationKey: bk,
      variables: { reply: 'yes', extra: 1 },
    });
    expect(sent.status, JSON.stringify(sent.body)).toBeLessThan(300);
    const look = await fetchOne(t.api, 'w', 'sub_io_msg-look');
    expect(look.variables).toEqual({ reply: 'yes', extra: 1 });
    expect((await instanceOf(t.api, id)).variables).toEqual({ extra: 1 });
    await complete(t.api, look, 'w');
    expect((await waitForStatus(t.api, id, 'completed')).variables).toEqual({ extra: 1, answer: 'yes' });
  });

  it('given nested subprocesses, then a read sees the innermost that has the name and a write goes to the innermost that holds it', async () => {
    const id = await start(t.api, 'sub_io_nested');
    const work = await fetchOne(t.api, 'w', 'sub_io_nested-work');
    expect(work.variables).toEqual({ a: 'inner', b: 'outer-b' });
    await complete(t.api, work, 'w', { a: 'x', b: 'changed', c: 1 });
    // Inner's a ended with it; Outer's b took the write.
    const later = await fetchOne(t.api, 'w', 'sub_io_nested-later');
    expect(later.variables).toEqual({ a: 'outer', b: 'changed', c: 1 });
    await complete(t.api, later, 'w');
    expect((await waitForStatus(t.api, id, 'completed')).variables).toEqual({ c: 1, seenB: 'changed' });
  });

  it('given an error boundary inside whose code variable the subprocess holds, then the caught code sets the local, not a process variable', async () => {
    const id = await start(t.api, 'sub_io_caught');
    const work = await fetchOne(t.api, 'w', 'sub_io_caught-work');
    const thrown = await t.api.post(`/api/external-tasks/${work.id}/bpmn-error`, {
      workerId: 'w',
      lockToken: work.lockToken,
      errorCode: 'LATE',
    });
    expect(thrown.status).toBe(204);
    const handled = await fetchOne(t.api, 'w', 'sub_io_caught-handled');
    expect(handled.variables).toMatchObject({ reason: 'LATE' });
    expect((await instanceOf(t.api, id)).variables).not.toHaveProperty('reason');
    expect((await complete(t.api, handled, 'w')).status).toBe(204);
    const done = await waitForStatus(t.api, id, 'completed');
    expect(done.variables).toEqual({ why: 'LATE' });
  });

  it('given a multi-instance subprocess whose output collection the subprocess around it holds, then the collection lands in that local', async () => {
    const id = await start(t.api, 'sub_io_collected', { variables: { items: ['a', 'b'] } });
    for (let i = 0; i < 2; i++)
      expect((await complete(t.api, await fetchOne(t.api, 'w', 'sub_io_collected-work'), 'w')).status).toBe(204);
    const done = await waitForStatus(t.api, id, 'completed');
    expect(done.variables).toEqual({ items: ['a', 'b'], result: ['A', 'B'] });
  });

  it('given an interrupting boundary on the subprocess, then its locals end with it and no output is written', async () => {
    const id = await start(t.api, 'sub_io_nested', { businessKey: `stop-${Date.now()}` });
    const work = await fetchOne(t.api, 'w', 'sub_io_nested-work');
    const bk = (await instanceOf(t.api, id)).businessKey;
    const sent = await t.api.post('/api/messages', { name: 'sub-stop', correlationKey: bk });
    expect(sent.status, JSON.stringify(sent.body)).toBeLessThan(300);
    const stopped = await fetchOne(t.api, 'w', 'sub_io_nested-stopped');
    expect(stopped.instanceId).toBe(id);
    expect(stopped.variables).toEqual({});
    const view = await instanceOf(t.api, id);
    expect(view.steps.filter((s: { variables?: unknown }) => s.variables !== undefined)).toEqual([]);
    // The canceled task's late complete changes nothing.
    expect((await complete(t.api, work, 'w', { a: 'late' })).status).toBe(409);
    await complete(t.api, stopped, 'w');
    expect((await waitForStatus(t.api, id, 'completed')).variables).toEqual({});
  });
});

describe('mappings on a repeating subprocess', () => {
  it('given a sequential multi-instance subprocess, then each pass gets its own locals over its element, and its output element reads them', async () => {
    const id = await start(t.api, 'sub_io_each', { variables: { items: ['a', 'b'] } });
    const first = await fetchOne(t.api, 'w', 'sub_io_each-work');
    expect(first.variables).toEqual({ items: ['a', 'b'], item: 'a', loopCounter: 1, label: 'A' });
    await complete(t.api, first, 'w', { label: 'A1' });
    const second = await fetchOne(t.api, 'w', 'sub_io_each-work');
    // The second pass starts from its own input, not from what the first pass wrote.
    expect(second.variables).toEqual({ items: ['a', 'b'], item: 'b', loopCounter: 2, label: 'B', lastLabel: 'A1' });
    await complete(t.api, second, 'w');
    expect((await waitForStatus(t.api, id, 'completed')).variables).toEqual({
      items: ['a', 'b'],
      lastLabel: 'B',
      labels: ['A1!', 'B!'],
    });
  });
});

describe("an operator's edit of a subprocess's locals", () => {
  it('given an output that read a bad local, then the edit with scope changes the local, and the retry completes the subprocess', async () => {
    const id = await start(t.api, 'sub_io_bad_local');
    await complete(t.api, await fetchOne(t.api, 'w', 'sub_io_bad_local-work'), 'w');
    const stuck = await waitForStatus(t.api, id, 'incident');
    expect(stuck.steps.find((s: { stepId: string }) => s.stepId === 'Sub')).toMatchObject({
      status: 'incident',
      variables: { limit: 'a' },
    });
    // A process variable of that name changes nothing: the local hides it.
    const bad = await t.api.post(`/api/incidents/${stuck.incidents[0].id}/retry`, { variables: { limit: 3 } });
    expect(bad.status).toBe(200);
    const again = await waitForStatus(t.api, id, 'incident');
    expect(again.incidents).toEqual([expect.objectContaining({ stepId: 'Sub', kind: 'io_mapping' })]);

    const edited = await t.api.patch(`/api/instances/${id}/variables`, {
      revision: again.revision,
      scope: 'Sub',
      set: { limit: 4 },
    });
    expect(edited.status, JSON.stringify(edited.body)).toBe(200);
    expect(edited.body).toMatchObject({ scope: 'Sub', variables: { limit: 4 } });
    expect((await t.api.post(`/api/incidents/${again.incidents[0].id}/retry`, {})).status).toBe(200);
    const done = await waitForStatus(t.api, id, 'completed');
    expect(done.variables).toEqual({ limit: 3, inRange: true });
    const history = (await t.api.get(`/api/instances/${id}/history`)).body.items as { kind: string; data?: any }[];
    expect(history.find((e) => e.kind === 'variables:edited')?.data).toMatchObject({ set: ['limit'], scope: 'Sub' });
  });

  it('given a subprocess that ended or an element that holds no locals, then the edit is refused and changes nothing; an open one takes it', async () => {
    const id = await start(t.api, 'sub_io_nested');
    await complete(t.api, await fetchOne(t.api, 'w', 'sub_io_nested-work'), 'w');
    const later = await fetchOne(t.api, 'w', 'sub_io_nested-later');
    const view = await instanceOf(t.api, id);
    for (const scope of ['Inner', 'later', 'nowhere']) {
      const refused = await t.api.patch(`/api/instances/${id}/variables`, { revision: view.revision, scope, set: { x: 1 } });
      expect(refused.status).toBe(409);
      expect(refused.body).toMatchObject({ type: 'Conflict', details: { scope } });
    }
    expect((await instanceOf(t.api, id)).revision).toBe(view.revision);
    const edited = await t.api.patch(`/api/instances/${id}/variables`, {
      revision: view.revision,
      scope: 'Outer',
      set: { b: 'edited' },
    });
    expect(edited.body).toMatchObject({ scope: 'Outer', variables: { a: 'outer', b: 'edited' } });
    await complete(t.api, later, 'w');
    expect((await waitForStatus(t.api, id, 'completed')).variables).toEqual({ seenB: 'edited' });
  });
});
