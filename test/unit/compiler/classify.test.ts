import { describe, expect, it } from 'vitest';
import { compileDiagnostics, compilePlan, errorsOf, readFixture } from './bpmn-helpers.ts';

describe('classifyNode: supported elements', () => {
  it('compiles every supported kind of step', async () => {
    const kinds = new Map<string, string>();
    for (const fixture of ['order.bpmn', 'inclusive.bpmn', 'terminate.bpmn']) {
      for (const step of (await compilePlan(readFixture(fixture))).plan.steps) kinds.set(step.id, step.kind);
    }
    expect(Object.fromEntries(kinds)).toMatchObject({
      StartEvent_Order: 'startEvent',
      EndEvent_Done: 'endEvent',
      StopAll: 'terminateEndEvent',
      Task_ChargeCard: 'serviceTask',
      Gateway_Fork: 'parallelGateway',
      Gateway_Review: 'exclusiveGateway',
      Split: 'inclusiveGateway',
    });
    expect(new Set(kinds.values()).size).toBe(7);
  });
});

describe('classifyNode: refusals name the id and the BPMN type', () => {
  const unsupported = readFixture('unsupported.bpmn');

  it.each([
    [
      'TimerStart',
      'bpmn:StartEvent with bpmn:ConditionalEventDefinition "Every day" (id TimerStart): start events are none, timer, message or signal start events',
    ],
    ['Approve', 'bpmn:UserTask "Approve" (id Approve)'],
    ['Script', 'bpmn:ScriptTask "Script" (id Script)'],
    ['PlainTask', 'bpmn:Task "PlainTask" (id PlainTask)'],
    ['Send', 'bpmn:SendTask "Send" (id Send)'],
    ['Receive', 'bpmn:ReceiveTask "Receive" (id Receive)'],
    ['Manual', 'bpmn:ManualTask "Manual" (id Manual)'],
    ['Rules', 'bpmn:BusinessRuleTask "Rules" (id Rules)'],
    ['SubStart', 'bpmn:StartEvent "SubStart" (id SubStart): the start event of an event subprocess has exactly one timer'],
    [
      'Timeout',
      'bpmn:BoundaryEvent with bpmn:EscalationEventDefinition "Timeout" (id Timeout): boundary events catch exactly one timer, message, signal, error or compensation',
    ],
    [
      'Wait',
      'bpmn:IntermediateCatchEvent with bpmn:ConditionalEventDefinition "Wait" (id Wait): intermediate catch events wait for exactly one timer, message or signal',
    ],
    ['Signal', 'bpmn:IntermediateThrowEvent "Signal" (id Signal)'],
    ['Race', 'bpmn:EventBasedGateway "Race" (id Race): an event-based gateway that starts instances'],
    ['Complex', 'bpmn:ComplexGateway "Complex" (id Complex)'],
    [
      'ErrorEnd',
      'bpmn:EndEvent with bpmn:EscalationEventDefinition "ErrorEnd" (id ErrorEnd): only none, terminate, error and compensation end events',
    ],
  ])('%s', async (id, text) => {
    const errors = errorsOf(await compileDiagnostics(unsupported)).filter((d) => d.elementId === id);
    expect(errors).toEqual([
      { elementId: id, severity: 'error', message: expect.stringContaining(`Unsupported element ${text}`) },
    ]);
  });

  it('reports nothing but the refusals for that file', async () => {
    const diagnostics = await compileDiagnostics(unsupported);
    // The call activity in it compiles; the loop marker without a condition or maximum and the
    // event subprocess with a flow into it are refused on their own.
    const own = (id: string) => diagnostics.filter((d) => d.elementId === id).map((d) => d.message);
    expect(own('Each')).toEqual([expect.stringContaining('would repeat forever')]);
    expect(own('Sub')).toEqual([expect.stringContaining('has sequence flows')]);
    const others = diagnostics.filter((d) => d.elementId !== 'Each' && d.elementId !== 'Sub');
    expect(others.every((d) => d.message.startsWith('Unsupported element'))).toBe(true);
    expect(diagnostics).toHaveLength(17);
  });

  it('refuses a compensation handler that no compensation boundary links', async () => {
    const xml = readFixture('order.bpmn').replace(
      'camunda:topic="review-order"',
      'camunda:topic="review-order" isForCompensation="true"',
    );
    expect(errorsOf(await compileDiagnostics(xml))).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ elementId: 'Task_ReviewOrder', message: expect.stringContaining('has sequence flows') }),
        expect.objectContaining({
          elementId: 'Task_ReviewOrder',
          message: expect.stringContaining('not associated with any compensation boundary'),
        }),
      ]),
    );
  });
});
