import { describe, expect, it } from 'vitest';
import { compileBpmn } from '../../../runtime/compiler/index.ts';
import { planSchemaErrors } from '../../../runtime/shared/plan-validator.ts';
import { buildBpmn, type FlowSpec, type NodeSpec } from '../../support/bpmn.ts';
import { processXml, flow, task } from './bpmn-helpers.ts';

/** s -> sub [ss -> a -> b -> se] -> after -> e, with boundaries on sub */
function withSub(
  inner: NodeSpec[] = [],
  innerFlows: FlowSpec[] = [],
  outer: NodeSpec[] = [],
  outerFlows: FlowSpec[] = [],
): string {
  return buildBpmn(
    'p',
    [
      { id: 's', type: 'startEvent' },
      {
        id: 'sub',
        type: 'subProcess',
        nodes: [
          { id: 'ss', type: 'startEvent' },
          { id: 'a', type: 'serviceTask', topic: 'a' },
          { id: 'b', type: 'serviceTask', topic: 'b' },
          { id: 'se', type: 'endEvent' },
          ...inner,
        ],
        flows: [{ from: 'ss', to: 'a' }, { from: 'a', to: 'b' }, { from: 'b', to: 'se' }, ...innerFlows],
      },
      { id: 'after', type: 'serviceTask', topic: 'after' },
      { id: 'e', type: 'endEvent' },
      ...outer,
    ],
    [{ from: 's', to: 'sub' }, { from: 'sub', to: 'after' }, { from: 'after', to: 'e' }, ...outerFlows],
  );
}

async function compiled(xml: string) {
  const result = await compileBpmn(xml);
  if (!result.ok) throw new Error(JSON.stringify(result.diagnostics));
  return result;
}

async function errors(xml: string) {
  const result = await compileBpmn(xml);
  expect(result.ok).toBe(false);
  return result.ok ? [] : result.diagnostics.filter((d) => d.severity === 'error');
}

describe('embedded subprocesses in the compiler', () => {
  it('flattens the inner steps with the subprocess as scope; the subprocess names its start; the plan is acyclic and valid', async () => {
    const { plan } = await compiled(withSub());
    const step = (id: string) => plan.steps.find((s) => s.id === id);
    expect(plan.steps.map((s) => s.id)).toEqual(['s', 'sub', 'ss', 'a', 'b', 'se', 'after', 'e']);
    expect(step('sub')).toMatchObject({
      kind: 'subProcess',
      subProcess: { start: 'ss' },
      incoming: ['Flow_1'],
      outgoing: ['Flow_2'],
    });
    expect(step('sub')).not.toHaveProperty('scope');
    for (const id of ['ss', 'a', 'b', 'se']) expect(step(id)?.scope).toBe('sub');
    expect(step('ss')).toMatchObject({ kind: 'startEvent', incoming: [], outgoing: ['sub_Flow_1'] });
    expect(plan.flows.map((f) => f.id).sort()).toEqual(['Flow_1', 'Flow_2', 'Flow_3', 'sub_Flow_1', 'sub_Flow_2', 'sub_Flow_3']);
    expect(planSchemaErrors(plan)).toEqual([]);
  });

  it('attaches timer, message, signal and error boundaries to the subprocess; an error end event inside names its code', async () => {
    const { plan } = await compiled(
      withSub(
        [
          { id: 'fail', type: 'errorEndEvent', code: 'NO_STOCK' },
          { id: 'x', type: 'exclusiveGateway', default: 'sub_Flow_6' },
        ],
        [
          { id: 'sub_Flow_5', from: 'x', to: 'fail', condition: '=missing' },
          { id: 'sub_Flow_6', from: 'x', to: 'a' },
        ],
        [
          { id: 'late', type: 'boundaryEvent', attachedTo: 'sub', timer: { duration: 'PT1H' } },
          { id: 'nudge', type: 'boundaryEvent', attachedTo: 'sub', interrupting: false, signal: 'nudge' },
          { id: 'oops', type: 'boundaryEvent', attachedTo: 'sub', error: { code: 'NO_STOCK' } },
          { id: 'e2', type: 'endEvent' },
          { id: 'e3', type: 'endEvent' },
          { id: 'e4', type: 'endEvent' },
        ],
        [
          { from: 'late', to: 'e2' },
          { from: 'nudge', to: 'e3' },
          { from: 'oops', to: 'e4' },
        ],
      )
        .replace(
          '<bpmn:sequenceFlow id="sub_Flow_1" sourceRef="ss" targetRef="a"/>',
          '<bpmn:sequenceFlow id="sub_Flow_1" sourceRef="ss" targetRef="x"/>',
        )
        .replace(
          '<bpmn:outgoing>sub_Flow_1</bpmn:outgoing></bpmn:startEvent>',
          '<bpmn:outgoing>sub_Flow_1</bpmn:outgoing></bpmn:startEvent>',
        ),
    );
    const step = (id: string) => plan.steps.find((s) => s.id === id);
    expect(step('sub')?.boundaries).toEqual(['late', 'nudge', 'oops']);
    expect(step('late')).toMatchObject({ boundary: { attachedTo: 'sub', interrupting: true }, wait: { trigger: 'timer' } });
    expect(step('nudge')).toMatchObject({ boundary: { attachedTo: 'sub', interrupting: false } });
    expect(step('fail')).toMatchObject({ kind: 'errorEndEvent', scope: 'sub', throwError: { errorCode: 'NO_STOCK' } });
  });

  it('given a subprocess with no start, two starts or a triggered start, then diagnostics name the elements', async () => {
    const noStart = processXml(
      [
        '<bpmn:startEvent id="S" />',
        '<bpmn:subProcess id="Sub">',
        task('A'),
        '</bpmn:subProcess>',
        '<bpmn:endEvent id="E" />',
        flow('F1', 'S', 'Sub'),
        flow('F2', 'Sub', 'E'),
      ].join('\n'),
    );
    expect(await errors(noStart)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ elementId: 'Sub', message: expect.stringContaining('has no start event') }),
      ]),
    );
    const twoStarts = withSub([{ id: 'ss2', type: 'startEvent' }], [{ from: 'ss2', to: 'b' }]);
    expect(await errors(twoStarts)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ elementId: 'ss2', message: expect.stringContaining('second start event of subprocess sub') }),
      ]),
    );
    const timed = withSub().replace(
      '<bpmn:startEvent id="ss">',
      '<bpmn:startEvent id="ss"><bpmn:timerEventDefinition id="tt"><bpmn:timeCycle>R/PT1H</bpmn:timeCycle></bpmn:timerEventDefinition>',
    );
    expect(await errors(timed)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ elementId: 'ss', message: expect.stringContaining('starts at a none start event') }),
      ]),
    );
  });

  it('given a flow crossing the subprocess border, then a diagnostic names the flow', async () => {
    const xml = withSub([], [], [], [{ id: 'Cross', from: 'a', to: 'after' }]);
    expect(await errors(xml)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ elementId: 'Cross', message: expect.stringContaining('crosses the border of subprocess sub') }),
      ]),
    );
  });

  it('given an event subprocess with flows, a transaction or a compensation boundary on a subprocess, then diagnostics name them', async () => {
    const eventSub = withSub().replace('<bpmn:subProcess id="sub">', '<bpmn:subProcess id="sub" triggeredByEvent="true">');
    expect(await errors(eventSub)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ elementId: 'sub', message: expect.stringContaining('has sequence flows') }),
      ]),
    );
    const transaction = withSub()
      .replace('<bpmn:subProcess id="sub">', '<bpmn:transaction id="sub">')
      .replace('</bpmn:subProcess>', '</bpmn:transaction>');
    expect(await errors(transaction)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ elementId: 'sub', message: expect.stringContaining('transaction subprocesses') }),
      ]),
    );
    const compensated = withSub(
      [],
      [],
      [
        { id: 'cb', type: 'compensationBoundary', attachedTo: 'sub', handler: 'undo' },
        { id: 'undo', type: 'serviceTask', topic: 'undo', forCompensation: true },
      ],
    );
    expect(await errors(compensated)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          elementId: 'cb',
          message: expect.stringContaining('attach compensation handlers to the tasks inside it'),
        }),
      ]),
    );
  });

  it('given a compensation throw naming the subprocess, then it compiles when a task inside has a handler', async () => {
    const xml = withSub(
      [
        { id: 'cb', type: 'compensationBoundary', attachedTo: 'a', handler: 'undoA' },
        { id: 'undoA', type: 'serviceTask', topic: 'undoA', forCompensation: true },
      ],
      [],
      [{ id: 'undoSub', type: 'compensationThrow', activityRef: 'sub', end: true }],
      [],
    )
      .replace(
        '<bpmn:sequenceFlow id="Flow_3" sourceRef="after" targetRef="e"/>',
        '<bpmn:sequenceFlow id="Flow_3" sourceRef="after" targetRef="undoSub"/>',
      )
      .replace('<bpmn:endEvent id="e"><bpmn:incoming>Flow_3</bpmn:incoming></bpmn:endEvent>', '<bpmn:endEvent id="e"/>');
    const result = await compileBpmn(xml);
    expect(result.ok ? [] : result.diagnostics.filter((d) => d.elementId !== 'e')).toEqual([]);
  });

  it('given a loop inside a subprocess whose pass both goes back and leaves, then it is refused naming the flow; a boundary path back to its subprocess is a loop', async () => {
    const inner = withSub([], [{ id: 'Back', from: 'b', to: 'a' }]);
    expect(await errors(inner)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ elementId: 'Back', message: expect.stringContaining('out of the loop at once') }),
      ]),
    );
    const outer = withSub(
      [],
      [],
      [{ id: 'retry', type: 'boundaryEvent', attachedTo: 'sub', timer: { duration: 'PT1M' } }],
      [{ id: 'Again', from: 'retry', to: 'sub' }],
    );
    const { plan } = await compiled(outer);
    expect(plan.steps.find((s) => s.kind === 'loop')?.cycle).toMatchObject({ head: 'sub', backFlows: ['Again'] });
  });

  it('checks joins inside a subprocess: an exclusive split joined by a parallel gateway is refused', async () => {
    const xml = withSub(
      [
        { id: 'x', type: 'exclusiveGateway' },
        { id: 'j', type: 'parallelGateway' },
        { id: 'c', type: 'serviceTask', topic: 'c' },
      ],
      [
        { id: 'X1', from: 'x', to: 'c', condition: '=true' },
        { id: 'X2', from: 'x', to: 'j', condition: '=false' },
        { from: 'c', to: 'j' },
        { from: 'j', to: 'se' },
      ],
    ).replace(
      '<bpmn:sequenceFlow id="sub_Flow_3" sourceRef="b" targetRef="se"/>',
      '<bpmn:sequenceFlow id="sub_Flow_3" sourceRef="b" targetRef="x"/>',
    );
    expect(await errors(xml)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ elementId: 'j', message: expect.stringContaining('never taken together') }),
      ]),
    );
  });
});
