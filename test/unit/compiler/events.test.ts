import { describe, expect, it } from 'vitest';
import { compileBpmn } from '../../../runtime/compiler/index.ts';
import { buildBpmn, type NodeSpec } from '../../support/bpmn.ts';

// start -> work (service task) -> end, with the given boundary on work, leading to 'late'.
function withBoundary(
  boundary: Omit<Extract<NodeSpec, { type: 'boundaryEvent' }>, 'id' | 'type' | 'attachedTo'>,
  extra: { attachedTo?: string } = {},
) {
  return buildBpmn(
    'p',
    [
      { id: 'start', type: 'startEvent' },
      { id: 'work', type: 'serviceTask', topic: 'work' },
      { id: 'b', type: 'boundaryEvent', attachedTo: extra.attachedTo ?? 'work', ...boundary },
      { id: 'late', type: 'serviceTask', topic: 'late' },
      { id: 'end', type: 'endEvent' },
      { id: 'end2', type: 'endEvent' },
    ],
    [
      { from: 'start', to: 'work' },
      { from: 'work', to: 'end' },
      { from: 'b', to: 'late' },
      { from: 'late', to: 'end2' },
    ],
  );
}

async function compileOk(xml: string) {
  const result = await compileBpmn(xml);
  if (!result.ok) throw new Error(JSON.stringify(result.diagnostics));
  return result.plan;
}

async function diagnosticsOf(xml: string) {
  const result = await compileBpmn(xml);
  expect(result.ok).toBe(false);
  return result.ok ? [] : result.diagnostics;
}

describe('events', () => {
  it('given an intermediate timer catch, then the step waits for that duration', async () => {
    const plan = await compileOk(
      buildBpmn(
        'p',
        [
          { id: 's', type: 'startEvent' },
          { id: 'wait', type: 'catchEvent', timer: { duration: 'PT10S' } },
          { id: 'e', type: 'endEvent' },
        ],
        [
          { from: 's', to: 'wait' },
          { from: 'wait', to: 'e' },
        ],
      ),
    );
    expect(plan.steps.find((s) => s.id === 'wait')).toMatchObject({
      kind: 'catchEvent',
      wait: { trigger: 'timer', timer: { kind: 'duration', expression: 'PT10S' } },
    });
  });

  it('given message and signal catches, then their names and correlation key are in the plan', async () => {
    const plan = await compileOk(
      buildBpmn(
        'p',
        [
          { id: 's', type: 'startEvent' },
          { id: 'paid', type: 'catchEvent', message: 'payment-received', correlationKey: 'orderId' },
          { id: 'go', type: 'catchEvent', signal: 'go' },
          { id: 'e', type: 'endEvent' },
        ],
        [
          { from: 's', to: 'paid' },
          { from: 'paid', to: 'go' },
          { from: 'go', to: 'e' },
        ],
      ),
    );
    expect(plan.steps.find((s) => s.id === 'paid')?.wait).toEqual({
      trigger: 'message',
      name: 'payment-received',
      correlationKey: 'orderId',
    });
    expect(plan.steps.find((s) => s.id === 'go')?.wait).toEqual({ trigger: 'signal', name: 'go' });
  });

  it('given boundary events, then the host lists them and each names its host and whether it interrupts', async () => {
    const plan = await compileOk(withBoundary({ timer: { duration: 'PT1M' }, interrupting: false }));
    expect(plan.steps.find((s) => s.id === 'work')?.boundaries).toEqual(['b']);
    expect(plan.steps.find((s) => s.id === 'b')).toMatchObject({
      kind: 'boundaryEvent',
      boundary: { attachedTo: 'work', interrupting: false },
      incoming: [],
    });
  });

  it('given an error boundary with a code and variables, then they are in the plan; without a code it catches all', async () => {
    const plan = await compileOk(
      withBoundary({ error: { code: 'CARD_DECLINED', codeVariable: 'code', messageVariable: 'why' } }),
    );
    expect(plan.steps.find((s) => s.id === 'b')?.wait).toEqual({
      trigger: 'error',
      errorCode: 'CARD_DECLINED',
      errorCodeVariable: 'code',
      errorMessageVariable: 'why',
    });
    const all = await compileOk(withBoundary({ error: {} }));
    expect(all.steps.find((s) => s.id === 'b')?.wait).toEqual({ trigger: 'error' });
  });

  it.each([
    ['a timer date without a zone', { timer: { date: '2026-12-01T09:00:00' } }, /with a zone/],
    ['a malformed duration', { timer: { duration: '10 seconds' } }, /ISO-8601 duration/],
    ['a non-interrupting error boundary', { error: { code: 'X' }, interrupting: false }, /make it interrupting/],
  ] as const)('given %s, then a diagnostic names the boundary', async (_label, boundary, message) => {
    const diagnostics = await diagnosticsOf(withBoundary(boundary as never));
    expect(diagnostics).toEqual(
      expect.arrayContaining([expect.objectContaining({ elementId: 'b', message: expect.stringMatching(message) })]),
    );
  });

  it('given a boundary on something other than a task or subprocess, then a diagnostic names it', async () => {
    const diagnostics = await diagnosticsOf(withBoundary({ timer: { duration: 'PT1M' } }, { attachedTo: 'end' }));
    expect(diagnostics).toEqual(
      expect.arrayContaining([expect.objectContaining({ elementId: 'b', message: expect.stringMatching(/attached to a task/) })]),
    );
  });

  it('given a boundary path leading back to its host, then it is a loop that repeats the host each time the boundary fires', async () => {
    const xml = buildBpmn(
      'p',
      [
        { id: 'start', type: 'startEvent' },
        { id: 'merge', type: 'exclusiveGateway' },
        { id: 'work', type: 'serviceTask', topic: 'work' },
        { id: 'b', type: 'boundaryEvent', attachedTo: 'work', timer: { duration: 'PT1M' } },
        { id: 'end', type: 'endEvent' },
      ],
      [
        { from: 'start', to: 'merge' },
        { from: 'merge', to: 'work' },
        { from: 'work', to: 'end' },
        { id: 'back', from: 'b', to: 'merge' },
      ],
    );
    const plan = await compileOk(xml);
    expect(plan.steps.find((s) => s.kind === 'loop')?.cycle).toEqual({
      head: 'merge',
      steps: expect.arrayContaining(['merge', 'work', 'b']),
      backFlows: ['back'],
      exitFlows: [expect.any(String)],
    });
  });

  it('given an interrupting boundary and the host path merging in an exclusive gateway, then it is sound; a parallel join there is refused', async () => {
    const merged = (join: 'exclusiveGateway' | 'parallelGateway') =>
      buildBpmn(
        'p',
        [
          { id: 'start', type: 'startEvent' },
          { id: 'work', type: 'serviceTask', topic: 'work' },
          { id: 'b', type: 'boundaryEvent', attachedTo: 'work', timer: { duration: 'PT1M' } },
          { id: 'join', type: join },
          { id: 'end', type: 'endEvent' },
        ],
        [
          { from: 'start', to: 'work' },
          { from: 'work', to: 'join' },
          { from: 'b', to: 'join' },
          { from: 'join', to: 'end' },
        ],
      );
    await compileOk(merged('exclusiveGateway'));
    const diagnostics = await diagnosticsOf(merged('parallelGateway'));
    expect(diagnostics).toEqual(expect.arrayContaining([expect.objectContaining({ elementId: 'join' })]));
  });
});

describe('zeebe:subscription correlation keys', () => {
  const zeebeFile = (subscription: string, catchAttributes = '', startToo = false) => `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" xmlns:baton="https://baton.dev/schema/bpmn/1.0" id="D" targetNamespace="x">
  <bpmn:message id="M" name="paid"><bpmn:extensionElements>${subscription}</bpmn:extensionElements></bpmn:message>
  <bpmn:process id="p" isExecutable="true">
    <bpmn:startEvent id="s">${startToo ? '<bpmn:messageEventDefinition messageRef="M" />' : ''}</bpmn:startEvent>
    <bpmn:intermediateCatchEvent id="c" ${catchAttributes}><bpmn:messageEventDefinition messageRef="M" /></bpmn:intermediateCatchEvent>
    <bpmn:endEvent id="e" />
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="c" /><bpmn:sequenceFlow id="f2" sourceRef="c" targetRef="e" />
  </bpmn:process>
</bpmn:definitions>`;
  const waitOf = async (xml: string, id: string) => {
    const result = await compileBpmn(xml);
    if (!result.ok) throw new Error(JSON.stringify(result.diagnostics));
    return { wait: result.plan.steps.find((s) => s.id === id)?.wait, warnings: result.warnings };
  };

  it('a catch reads "=expr" as FEEL and plain text as a fixed key; a message start event does not read it', async () => {
    expect((await waitOf(zeebeFile('<zeebe:subscription correlationKey="=order.id" />'), 'c')).wait).toEqual({
      trigger: 'message',
      name: 'paid',
      correlationKey: 'order.id',
    });
    expect((await waitOf(zeebeFile('<zeebe:subscription correlationKey="fixed-1" />'), 'c')).wait).toMatchObject({
      correlationKey: '"fixed-1"',
    });
    const withStart = await waitOf(zeebeFile('<zeebe:subscription correlationKey="=order.id" />', '', true), 's');
    expect(withStart.wait).toEqual({ trigger: 'message', name: 'paid' });
    expect(withStart.warnings).toEqual([]);
  });

  it('both baton:correlationKey and a subscription key, or a key that is no expression, are refused naming the catch', async () => {
    const both = await compileBpmn(zeebeFile('<zeebe:subscription correlationKey="=a" />', 'baton:correlationKey="= b"'));
    expect(!both.ok && both.diagnostics).toEqual([
      expect.objectContaining({ elementId: 'c', message: expect.stringContaining('keep one') }),
    ]);
    const bad = await compileBpmn(zeebeFile('<zeebe:subscription correlationKey="=a +" />'));
    expect(!bad.ok && bad.diagnostics).toEqual([
      expect.objectContaining({ elementId: 'c', message: expect.stringContaining('is not a valid expression') }),
    ]);
  });
});

describe('timers from expressions', () => {
  const catching = (timer: { duration?: string; date?: string; cycle?: string }) =>
    buildBpmn(
      'p',
      [
        { id: 'start', type: 'startEvent' },
        { id: 'wait', type: 'catchEvent', timer },
        { id: 'end', type: 'endEvent' },
      ],
      [
        { from: 'start', to: 'wait' },
        { from: 'wait', to: 'end' },
      ],
    );

  it('a ${...} or = expression on a catch compiles to FEEL evaluated when the timer starts; a literal stays as it is', async () => {
    const juel = await compileBpmn(catching({ duration: '${reminder}' }));
    expect(juel.ok && juel.plan.steps.find((s) => s.id === 'wait')?.wait).toEqual({
      trigger: 'timer',
      timer: { kind: 'duration', expression: '${reminder}', feel: 'reminder' },
    });
    const feel = await compileBpmn(catching({ date: '= date and time(due)' }));
    expect(feel.ok && feel.plan.steps.find((s) => s.id === 'wait')?.wait).toMatchObject({
      timer: { kind: 'date', feel: 'date and time(due)' },
    });
    const literal = await compileBpmn(catching({ duration: 'PT5M' }));
    expect(literal.ok && literal.plan.steps.find((s) => s.id === 'wait')?.wait).toEqual({
      trigger: 'timer',
      timer: { kind: 'duration', expression: 'PT5M' },
    });
  });

  it('an expression that cannot be read is refused naming the event', async () => {
    const bad = await compileBpmn(catching({ duration: '${a +}' }));
    expect(!bad.ok && bad.diagnostics).toEqual([
      expect.objectContaining({ elementId: 'wait', message: expect.stringContaining('cannot be used') }),
    ]);
  });
});
