import { describe, expect, it } from 'vitest';
import { compileBpmn } from '../../../runtime/compiler/index.ts';
import { buildBpmn, type NodeSpec } from '../../support/bpmn.ts';

type Boundary = Omit<Extract<NodeSpec, { type: 'boundaryEvent' }>, 'id' | 'type' | 'attachedTo'>;

// start -> work (service task) -> merge (parallel join) -> end; boundary b on work -> remind (service task) -> its own end, or the join.
function withBoundary(boundary: Boundary, then: 'own end' | 'main end' = 'own end') {
  return buildBpmn(
    'p',
    [
      { id: 'start', type: 'startEvent' },
      { id: 'work', type: 'serviceTask', topic: 'work' },
      { id: 'b', type: 'boundaryEvent', attachedTo: 'work', interrupting: false, ...boundary },
      { id: 'remind', type: 'serviceTask', topic: 'remind' },
      { id: 'merge', type: 'parallelGateway' },
      { id: 'end', type: 'endEvent' },
      ...(then === 'own end' ? [{ id: 'reminded', type: 'endEvent' } as const] : []),
    ],
    [
      { from: 'start', to: 'work' },
      { from: 'work', to: 'merge' },
      { from: 'merge', to: 'end' },
      { from: 'b', to: 'remind' },
      then === 'own end' ? { from: 'remind', to: 'reminded' } : { from: 'remind', to: 'merge' },
    ],
  );
}

describe('repeating boundaries', () => {
  it.each([
    ['a timer cycle', { timer: { cycle: 'R3/PT1M' } }],
    ['a message', { message: 'ping' }],
    ['a signal', { signal: 'ping' }],
  ] as const)(
    'given a non-interrupting %s whose path is its own, then every firing runs that path as a pass of the boundary',
    async (_label, boundary) => {
      const result = await compileBpmn(withBoundary(boundary as never));
      if (!result.ok) throw new Error(JSON.stringify(result.diagnostics));
      const step = (id: string) => result.plan.steps.find((s) => s.id === id);
      expect(step('b')?.boundary).toEqual({
        attachedTo: 'work',
        interrupting: false,
        repeats: { steps: expect.arrayContaining(['remind', 'reminded']), flows: expect.any(Array) },
      });
      expect(step('b')?.boundary?.repeats?.steps).toHaveLength(2);
      expect(step('b')?.boundary?.repeats?.flows).toHaveLength(2);
      expect(step('remind')?.inLoop).toBe('b');
      expect(step('reminded')?.inLoop).toBe('b');
      expect(step('work')?.inLoop).toBeUndefined();
    },
  );

  it('given a non-interrupting timer cycle whose path joins the main flow, then deploy refuses it naming the boundary and the join', async () => {
    const result = await compileBpmn(withBoundary({ timer: { cycle: 'R3/PT1M' } }, 'main end'));
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.diagnostics).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          elementId: 'b',
          severity: 'error',
          message: expect.stringMatching(/timeCycle, but its path joins the flow from work at merge/),
        }),
      ]),
    );
  });

  it('given a non-interrupting message boundary whose path joins the main flow, then it fires once and deploy warns so', async () => {
    const result = await compileBpmn(withBoundary({ message: 'ping' }, 'main end'));
    if (!result.ok) throw new Error(JSON.stringify(result.diagnostics));
    expect(result.plan.steps.find((s) => s.id === 'b')?.boundary?.repeats).toBeUndefined();
    expect(result.warnings).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          elementId: 'b',
          message: expect.stringMatching(/fires once per activation of its host: its path joins/),
        }),
      ]),
    );
  });

  it('given a non-interrupting timer duration, then it fires once without a word: a duration has one due time', async () => {
    const result = await compileBpmn(withBoundary({ timer: { duration: 'PT1M' } }, 'main end'));
    if (!result.ok) throw new Error(JSON.stringify(result.diagnostics));
    expect(result.plan.steps.find((s) => s.id === 'b')?.boundary?.repeats).toBeUndefined();
    expect(JSON.stringify(result.warnings)).not.toContain('fires once');
  });
});
