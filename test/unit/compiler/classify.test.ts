import { describe, expect, it } from 'vitest';
import { compileDiagnostics, compilePlan, errorsOf, flow, processXml, readFixture } from './bpmn-helpers.ts';

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

  it('TimerStart: a conditional start event runs, and one without a condition is refused naming it', async () => {
    const errors = errorsOf(await compileDiagnostics(unsupported)).filter((d) => d.elementId === 'TimerStart');
    expect(errors).toEqual([
      {
        elementId: 'TimerStart',
        severity: 'error',
        message: expect.stringContaining('Conditional event TimerStart "Every day" has no condition'),
      },
    ]);
  });

  it.each([
    ['Receive', 'bpmn:ReceiveTask "Receive" (id Receive)'],
    ['Rules', 'bpmn:BusinessRuleTask "Rules" (id Rules): Baton does not evaluate DMN decisions'],
    ['SubStart', 'bpmn:StartEvent "SubStart" (id SubStart): the start event of an event subprocess has exactly one timer'],
    [
      'Timeout',
      'bpmn:BoundaryEvent with bpmn:CancelEventDefinition "Timeout" (id Timeout): boundary events catch exactly one timer, message, signal, condition, error, escalation or compensation',
    ],
    [
      'Wait',
      'bpmn:IntermediateCatchEvent with bpmn:EscalationEventDefinition "Wait" (id Wait): intermediate catch events wait for exactly one timer, message, signal or condition',
    ],
    ['Notify', 'bpmn:IntermediateThrowEvent with bpmn:MessageEventDefinition "Notify" (id Notify)'],
    ['Race', 'bpmn:EventBasedGateway "Race" (id Race): an event-based gateway that starts instances'],
    ['Complex', 'bpmn:ComplexGateway "Complex" (id Complex)'],
    [
      'ErrorEnd',
      'bpmn:EndEvent with bpmn:CancelEventDefinition "ErrorEnd" (id ErrorEnd): only none, terminate, error, escalation, signal, message and compensation end events',
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
    // The plain and manual tasks pass through; the send task runs as an external task and needs a topic.
    const own = (id: string) => diagnostics.filter((d) => d.elementId === id).map((d) => d.message);
    expect(own('Each')).toEqual([expect.stringContaining('would repeat forever')]);
    expect(own('Sub')).toEqual([expect.stringContaining('has sequence flows')]);
    expect(own('Send')).toEqual([expect.stringContaining('Send task Send has no topic')]);
    expect(own('PlainTask')).toEqual([expect.stringContaining('is a plain task')]);
    expect(own('Manual')).toEqual([]);
    expect(own('Approve')).toEqual([]); // a user task waits for a person
    expect(own('Script')).toEqual([expect.stringContaining('Script task Script: it has no script format')]);
    expect(own('TimerStart')).toEqual([expect.stringContaining('has no condition')]);
    const others = diagnostics.filter((d) => !['Each', 'Sub', 'Send', 'PlainTask', 'Script', 'TimerStart'].includes(d.elementId));
    expect(others.every((d) => d.message.startsWith('Unsupported element'))).toBe(true);
    expect(diagnostics).toHaveLength(15);
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

describe('classifyNode: tasks that pass through or run as external tasks', () => {
  const body = (elements: string, ids: string[]) =>
    processXml(
      [
        '<bpmn:startEvent id="S" />',
        elements,
        '<bpmn:endEvent id="E" />',
        ...['S', ...ids].map((from, i) => flow(`F${i}`, from, [...ids, 'E'][i] as string)),
      ].join('\n'),
      'xmlns:zeebe="http://camunda.org/schema/zeebe/1.0"',
    );

  it('a plain task, a manual task and a none intermediate throw event pass through; send and business rule tasks with a topic are external tasks', async () => {
    const { plan } = await compilePlan(
      body(
        [
          '<bpmn:task id="T" />',
          '<bpmn:manualTask id="M" />',
          '<bpmn:intermediateThrowEvent id="N" />',
          '<bpmn:sendTask id="Send" camunda:type="external" camunda:topic="mail" />',
          '<bpmn:businessRuleTask id="Rule"><bpmn:extensionElements><zeebe:taskDefinition type="score" /></bpmn:extensionElements></bpmn:businessRuleTask>',
        ].join('\n'),
        ['T', 'M', 'N', 'Send', 'Rule'],
      ),
    );
    const kinds = Object.fromEntries(plan.steps.map((s) => [s.id, s.kind]));
    expect(kinds).toMatchObject({
      T: 'passThrough',
      M: 'passThrough',
      N: 'passThrough',
      Send: 'serviceTask',
      Rule: 'serviceTask',
    });
    expect(plan.steps.find((s) => s.id === 'Send')?.task?.topic).toBe('mail');
    expect(plan.steps.find((s) => s.id === 'Rule')?.task?.topic).toBe('score');
  });

  it.each([
    [
      '<bpmn:task id="X"><bpmn:multiInstanceLoopCharacteristics camunda:collection="xs" /></bpmn:task>',
      'cannot loop or be multi-instance',
    ],
    [
      '<bpmn:businessRuleTask id="X"><bpmn:extensionElements><zeebe:calledDecision decisionId="d" resultVariable="r" /></bpmn:extensionElements></bpmn:businessRuleTask>',
      'does not evaluate DMN decisions',
    ],
    ['<bpmn:serviceTask id="X" camunda:class="com.acme.Charge" />', 'runs Java code (camunda:class "com.acme.Charge")'],
    ['<bpmn:sendTask id="X" camunda:delegateExpression="${mailer}" />', 'Send task X runs Java code'],
  ])('%s is refused naming it', async (element, text) => {
    const errors = errorsOf(await compileDiagnostics(body(element, ['X'])));
    expect(errors).toEqual([expect.objectContaining({ elementId: 'X', message: expect.stringContaining(text) })]);
  });
});
