import { describe, expect, it } from 'vitest';
import { compileBpmn } from '../../../runtime/compiler/index.ts';
import { buildBpmn, type FlowSpec, type NodeSpec } from '../../support/bpmn.ts';

function saga(
  extra: NodeSpec[] = [],
  flows: FlowSpec[] = [],
  last: NodeSpec = { id: 'undoAll', type: 'compensationThrow', end: true },
): string {
  return buildBpmn(
    'p',
    [
      { id: 's', type: 'startEvent' },
      { id: 'book', type: 'serviceTask', topic: 'book', onExhausted: 'compensate' },
      { id: 'comp', type: 'compensationBoundary', attachedTo: 'book', handler: 'unbook' },
      { id: 'unbook', type: 'serviceTask', topic: 'unbook', forCompensation: true },
      last,
      ...extra,
    ],
    [{ from: 's', to: 'book' }, { from: 'book', to: last.id }, ...flows],
  );
}

describe('compensation in the compiler', () => {
  it('given a handler linked by an association, then the host names it, the handler is marked and the throw is a step', async () => {
    const result = await compileBpmn(saga());
    if (!result.ok) throw new Error(JSON.stringify(result.diagnostics));
    const step = (id: string) => result.plan.steps.find((s) => s.id === id);
    expect(step('book')).toMatchObject({
      compensation: { handler: 'unbook' },
      task: { topic: 'book', onExhausted: 'compensate' },
    });
    expect(step('unbook')).toMatchObject({ kind: 'serviceTask', compensationHandler: true, incoming: [], outgoing: [] });
    expect(step('undoAll')).toMatchObject({ kind: 'compensationThrow', throwCompensation: {} });
  });

  it('given a throw naming an activity without a handler, then a diagnostic names the throw', async () => {
    const result = await compileBpmn(saga([], [], { id: 'undoOne', type: 'compensationThrow', activityRef: 's', end: true }));
    expect(result.ok).toBe(false);
    expect(!result.ok && result.diagnostics).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ elementId: 'undoOne', message: expect.stringContaining('has no compensation handler') }),
      ]),
    );
  });

  it('given a handler with sequence flows, then a diagnostic names the handler', async () => {
    const result = await compileBpmn(saga([{ id: 'e2', type: 'endEvent' }], [{ from: 'unbook', to: 'e2' }]));
    expect(!result.ok && result.diagnostics).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ elementId: 'unbook', message: expect.stringContaining('has sequence flows') }),
      ]),
    );
  });

  it('given waitForCompletion false or an unknown onExhausted, then diagnostics name the elements', async () => {
    const noWait = saga().replace(
      '<bpmn:compensateEventDefinition id="undoAll_def"/>',
      '<bpmn:compensateEventDefinition id="undoAll_def" waitForCompletion="false"/>',
    );
    const a = await compileBpmn(noWait);
    expect(!a.ok && a.diagnostics).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ elementId: 'undoAll', message: expect.stringContaining('waitForCompletion') }),
      ]),
    );
    const b = await compileBpmn(saga().replace('baton:onExhausted="compensate"', 'baton:onExhausted="explode"'));
    expect(!b.ok && b.diagnostics).toEqual(
      expect.arrayContaining([expect.objectContaining({ elementId: 'book', message: expect.stringContaining('onExhausted') })]),
    );
  });
});
