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
    ['a non-interrupting cycle', { timer: { cycle: 'R3/PT1M' }, interrupting: false }, /repeated activations/],
    ['a non-interrupting error boundary', { error: { code: 'X' }, interrupting: false }, /make it interrupting/],
  ] as const)('given %s, then a diagnostic names the boundary', async (_label, boundary, message) => {
    const diagnostics = await diagnosticsOf(withBoundary(boundary as never));
    expect(diagnostics).toEqual(
      expect.arrayContaining([expect.objectContaining({ elementId: 'b', message: expect.stringMatching(message) })]),
    );
  });

  it('given a boundary on something other than a service task, then a diagnostic names it', async () => {
    const diagnostics = await diagnosticsOf(withBoundary({ timer: { duration: 'PT1M' } }, { attachedTo: 'end' }));
    expect(diagnostics).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ elementId: 'b', message: expect.stringMatching(/attached to a service task/) }),
      ]),
    );
  });

  it('given a boundary path leading back to its host, then the loop is refused while boundaries do not run in loops', async () => {
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
    const diagnostics = await diagnosticsOf(xml);
    expect(diagnostics).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          elementId: 'b',
          message: expect.stringContaining('boundary events do not run inside a loop yet'),
        }),
      ]),
    );
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
