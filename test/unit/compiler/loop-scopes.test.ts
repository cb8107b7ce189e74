import { describe, expect, it } from 'vitest';
import { compileDiagnostics, compilePlan, errorsOf, flow, processXml, readFixture, task } from './bpmn-helpers.ts';

describe('loop scopes', () => {
  it('compile a retry loop to a loop step: its head, body, back flow and exit', async () => {
    const { plan, warnings } = await compilePlan(readFixture('loop.bpmn'));
    expect(warnings).toEqual([]);
    expect(plan.steps.find((s) => s.kind === 'loop')).toEqual({
      id: 'loop:Merge',
      kind: 'loop',
      incoming: [],
      outgoing: [],
      cycle: {
        head: 'Merge',
        steps: expect.arrayContaining(['Merge', 'Try', 'Check']),
        backFlows: ['Flow_Again'],
        exitFlows: ['Flow_Done'],
      },
    });
    expect(
      plan.steps
        .filter((s) => s.inLoop === 'loop:Merge')
        .map((s) => s.id)
        .sort(),
    ).toEqual(['Check', 'Merge', 'Try']);
  });

  it('nest a cycle left inside a body once its back flows are cut', async () => {
    const xml = processXml(
      [
        '<bpmn:startEvent id="S" />',
        '<bpmn:exclusiveGateway id="Outer" />',
        '<bpmn:exclusiveGateway id="Inner" />',
        task('Draft'),
        '<bpmn:exclusiveGateway id="Again" default="ToReview" />',
        task('Review'),
        '<bpmn:exclusiveGateway id="Done" default="Out" />',
        '<bpmn:endEvent id="E" />',
        flow('F1', 'S', 'Outer'),
        flow('F2', 'Outer', 'Inner'),
        flow('F3', 'Inner', 'Draft'),
        flow('F4', 'Draft', 'Again'),
        flow('Redraft', 'Again', 'Inner', '${redraft}'),
        flow('ToReview', 'Again', 'Review'),
        flow('F5', 'Review', 'Done'),
        flow('Rework', 'Done', 'Outer', '${rework}'),
        flow('Out', 'Done', 'E'),
      ].join('\n'),
    );
    const { plan } = await compilePlan(xml);
    const loops = plan.steps.filter((s) => s.kind === 'loop');
    expect(loops.map((l) => [l.id, l.inLoop, l.cycle?.backFlows, l.cycle?.exitFlows])).toEqual([
      ['loop:Outer', undefined, ['Rework'], ['Out']],
      ['loop:Inner', 'loop:Outer', ['Redraft'], ['ToReview']],
    ]);
    expect(plan.steps.find((s) => s.id === 'Draft')?.inLoop).toBe('loop:Inner');
    expect(plan.steps.find((s) => s.id === 'Review')?.inLoop).toBe('loop:Outer');
  });

  it('refuse a cycle entered at two steps, naming them', async () => {
    const xml = processXml(
      [
        '<bpmn:startEvent id="S" />',
        '<bpmn:exclusiveGateway id="G" />',
        task('A'),
        task('B'),
        '<bpmn:exclusiveGateway id="Leave" default="Out" />',
        '<bpmn:endEvent id="E" />',
        flow('F1', 'S', 'G'),
        flow('ToA', 'G', 'A', '${a}'),
        flow('ToB', 'G', 'B', '${!a}'),
        flow('AB', 'A', 'B'),
        flow('BL', 'B', 'Leave'),
        flow('Back', 'Leave', 'A', '${again}'),
        flow('Out', 'Leave', 'E'),
      ].join('\n'),
    );
    expect(errorsOf(await compileDiagnostics(xml))).toEqual([
      expect.objectContaining({ elementId: 'A', message: expect.stringContaining('is entered at 2 steps (A, B)') }),
    ]);
  });

  it('refuse a pass that can both go back and leave', async () => {
    const xml = processXml(
      [
        '<bpmn:startEvent id="S" />',
        '<bpmn:exclusiveGateway id="M" />',
        task('Work'),
        '<bpmn:inclusiveGateway id="Both" />',
        '<bpmn:endEvent id="E" />',
        flow('F1', 'S', 'M'),
        flow('F2', 'M', 'Work'),
        flow('F3', 'Work', 'Both'),
        flow('Back', 'Both', 'M', '${again}'),
        flow('Out', 'Both', 'E', '${done}'),
      ].join('\n'),
    );
    expect(errorsOf(await compileDiagnostics(xml))).toEqual([
      expect.objectContaining({
        elementId: 'Back',
        message: expect.stringContaining('can take flow Back back to M and flow Out out of the loop at once'),
      }),
    ]);
  });

  it('refuse a cycle without a task: it would spin', async () => {
    const xml = processXml(
      [
        '<bpmn:startEvent id="S" />',
        '<bpmn:exclusiveGateway id="M" />',
        '<bpmn:exclusiveGateway id="G" default="Out" />',
        '<bpmn:endEvent id="E" />',
        flow('F1', 'S', 'M'),
        flow('F2', 'M', 'G'),
        flow('Back', 'G', 'M', '${again}'),
        flow('Out', 'G', 'E'),
      ].join('\n'),
    );
    expect(errorsOf(await compileDiagnostics(xml))).toEqual([
      expect.objectContaining({ elementId: 'M', message: expect.stringContaining('has no step that waits') }),
    ]);
  });

  it('keep a boundary event on a step of the body in the body, and refuse a compensation throw inside a loop', async () => {
    const withBoundary = (definition: string) =>
      readFixture('loop.bpmn').replace(
        '<bpmn:serviceTask id="Try" camunda:type="external" camunda:topic="try" />',
        `<bpmn:serviceTask id="Try" camunda:type="external" camunda:topic="try" /><bpmn:boundaryEvent id="Late" attachedToRef="Try">${definition}</bpmn:boundaryEvent><bpmn:endEvent id="Gone" /><bpmn:sequenceFlow id="Flow_Late" sourceRef="Late" targetRef="Gone" />`,
      );
    const { plan } = await compilePlan(
      withBoundary('<bpmn:timerEventDefinition><bpmn:timeDuration>PT1H</bpmn:timeDuration></bpmn:timerEventDefinition>'),
    );
    expect(plan.steps.find((s) => s.id === 'loop:Merge')?.cycle).toMatchObject({
      steps: expect.arrayContaining(['Late']),
      exitFlows: ['Flow_Late', 'Flow_Done'],
    });
    // A compensation throw inside a pass would undo that pass or every pass: refused.
    const throwing = readFixture('loop.bpmn')
      .replace(
        '<bpmn:serviceTask id="Try" camunda:type="external" camunda:topic="try" />',
        '<bpmn:serviceTask id="Try" camunda:type="external" camunda:topic="try" /><bpmn:intermediateThrowEvent id="Undo"><bpmn:compensateEventDefinition /></bpmn:intermediateThrowEvent>',
      )
      .replace(
        '<bpmn:sequenceFlow id="Flow_Check" sourceRef="Try" targetRef="Check" />',
        '<bpmn:sequenceFlow id="Flow_Check" sourceRef="Try" targetRef="Undo" /><bpmn:sequenceFlow id="Flow_Undone" sourceRef="Undo" targetRef="Check" />',
      );
    expect(errorsOf(await compileDiagnostics(throwing))).toContainEqual(
      expect.objectContaining({
        elementId: 'Undo',
        message: expect.stringContaining('compensation events do not run inside a loop'),
      }),
    );
  });

  it('find cycles through unsupported elements too, reporting the element only', async () => {
    const xml = processXml(
      [
        '<bpmn:startEvent id="S" />',
        '<bpmn:complexGateway id="U" />',
        task('T'),
        '<bpmn:exclusiveGateway id="G" default="Out" />',
        '<bpmn:endEvent id="E" />',
        flow('F1', 'S', 'U'),
        flow('F2', 'U', 'T'),
        flow('F3', 'T', 'G'),
        flow('Back', 'G', 'U', '${again}'),
        flow('Out', 'G', 'E'),
      ].join('\n'),
    );
    expect(errorsOf(await compileDiagnostics(xml)).map((e) => e.elementId)).toEqual(['U']);
  });

  it('handle a very long cycle without overflowing the stack', async () => {
    const n = 3000;
    const body = [
      '<bpmn:startEvent id="S" />',
      '<bpmn:exclusiveGateway id="M" />',
      ...Array.from({ length: n }, (_, i) => task(`T${i}`, 't')),
      '<bpmn:exclusiveGateway id="G" default="Out" />',
      '<bpmn:endEvent id="E" />',
      flow('F_in', 'S', 'M'),
      flow('F_0', 'M', 'T0'),
      ...Array.from({ length: n - 1 }, (_, i) => flow(`F${i}`, `T${i}`, `T${i + 1}`)),
      flow('F_last', `T${n - 1}`, 'G'),
      flow('Back', 'G', 'M', '${again}'),
      flow('Out', 'G', 'E'),
    ];
    const { plan } = await compilePlan(processXml(body.join('\n')));
    expect(plan.steps.find((s) => s.kind === 'loop')?.cycle?.steps).toHaveLength(n + 2);
  });
});
