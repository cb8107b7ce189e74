// Receive tasks compile to steps that wait for their message as a message catch event does
// (kind catchEvent, elementType bpmn:ReceiveTask), with boundaries; what they cannot say
// unambiguously is refused, naming the element.
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import planSchema from '../../../schemas/plan.schema.json' with { type: 'json' };
import { compileDiagnostics, compilePlan, errorsOf, flow, processXml, task } from './bpmn-helpers.ts';

const MESSAGE = '<bpmn:message id="Msg_Paid" name="payment-received" />';

/** start S -> receive task R (its attributes and content) -> service task after -> end E, plus `extra`. */
function receiving(attributes: string, content = '', extra = ''): string {
  return processXml(
    [
      '<bpmn:startEvent id="S" />',
      `<bpmn:receiveTask id="R" name="await payment" ${attributes}>${content}</bpmn:receiveTask>`,
      task('after'),
      '<bpmn:endEvent id="E" />',
      flow('F1', 'S', 'R'),
      flow('F2', 'R', 'after'),
      flow('F3', 'after', 'E'),
      extra,
    ].join('\n'),
  ).replace('<bpmn:process', `${MESSAGE}\n  <bpmn:process`);
}

function zeebeFile(subscription: string, attributes = ''): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" xmlns:baton="https://baton.dev/schema/bpmn/1.0" id="D" targetNamespace="x">
  <bpmn:message id="Msg_Paid" name="payment-received"><bpmn:extensionElements>${subscription}</bpmn:extensionElements></bpmn:message>
  <bpmn:process id="p" isExecutable="true">
    <bpmn:startEvent id="S" />
    <bpmn:receiveTask id="R" messageRef="Msg_Paid" ${attributes} />
    <bpmn:serviceTask id="after"><bpmn:extensionElements><zeebe:taskDefinition type="after" /></bpmn:extensionElements></bpmn:serviceTask>
    <bpmn:endEvent id="E" />
    <bpmn:sequenceFlow id="F1" sourceRef="S" targetRef="R" />
    <bpmn:sequenceFlow id="F2" sourceRef="R" targetRef="after" />
    <bpmn:sequenceFlow id="F3" sourceRef="after" targetRef="E" />
  </bpmn:process>
</bpmn:definitions>`;
}

function boundary(id: string, definition: string, attributes = ''): string {
  return [
    `<bpmn:boundaryEvent id="${id}" attachedToRef="R" ${attributes}>${definition}</bpmn:boundaryEvent>`,
    `<bpmn:endEvent id="${id}_end" />`,
    flow(`${id}_flow`, id, `${id}_end`),
  ].join('\n');
}

async function errorsAt(xml: string, id: string): Promise<string[]> {
  return errorsOf(await compileDiagnostics(xml))
    .filter((d) => d.elementId === id)
    .map((d) => d.message);
}

describe('receive tasks: the plan', () => {
  it('given a Camunda 7 receive task with baton:correlationKey, then it waits like a message catch event and says it is a receive task', async () => {
    const { plan } = await compilePlan(receiving('messageRef="Msg_Paid" baton:correlationKey="= orderId"'));
    expect(plan.steps.find((s) => s.id === 'R')).toEqual({
      id: 'R',
      kind: 'catchEvent',
      elementType: 'bpmn:ReceiveTask',
      name: 'await payment',
      incoming: ['F1'],
      outgoing: ['F2'],
      wait: { trigger: 'message', name: 'payment-received', correlationKey: 'orderId' },
    });
    const validate = new Ajv({ allErrors: true, strict: true }).compile(planSchema);
    expect(validate(plan), JSON.stringify(validate.errors)).toBe(true);
  });

  it('given a receive task without a correlation key, then it correlates on the business key as a catch event does', async () => {
    const { plan } = await compilePlan(receiving('messageRef="Msg_Paid"'));
    expect(plan.steps.find((s) => s.id === 'R')?.wait).toEqual({ trigger: 'message', name: 'payment-received' });
  });

  it('given a Zeebe file, then the message zeebe:subscription correlationKey is its key (FEEL after =, else fixed)', async () => {
    const feel = await compilePlan(zeebeFile('<zeebe:subscription correlationKey="=orderId" />'));
    expect(feel.plan.steps.find((s) => s.id === 'R')).toMatchObject({
      kind: 'catchEvent',
      elementType: 'bpmn:ReceiveTask',
      wait: { trigger: 'message', name: 'payment-received', correlationKey: 'orderId' },
    });
    const fixed = await compilePlan(zeebeFile('<zeebe:subscription correlationKey="order-7" />'));
    expect(fixed.plan.steps.find((s) => s.id === 'R')?.wait).toEqual({
      trigger: 'message',
      name: 'payment-received',
      correlationKey: '"order-7"',
    });
    // The key is read by the receive task: no warning that only a start event uses it.
    expect(feel.warnings.filter((w) => w.elementId === 'Msg_Paid')).toEqual([]);
  });

  it('given both keys in a Zeebe file, then it is refused as on a catch event, naming the receive task', async () => {
    const xml = zeebeFile('<zeebe:subscription correlationKey="=orderId" />', 'baton:correlationKey="= other"');
    expect(await errorsAt(xml, 'R')).toEqual([
      expect.stringContaining("Receive task R has both baton:correlationKey and its message's zeebe:subscription correlationKey"),
    ]);
  });

  it('given timer, message and signal boundaries, then the receive task lists them and each names it as host', async () => {
    const xml = receiving(
      'messageRef="Msg_Paid"',
      '',
      [
        boundary('Late', '<bpmn:timerEventDefinition><bpmn:timeDuration>PT1H</bpmn:timeDuration></bpmn:timerEventDefinition>'),
        boundary('Remind', '<bpmn:signalEventDefinition signalRef="Sig" />', 'cancelActivity="false"'),
      ].join('\n'),
    ).replace('<bpmn:process', '<bpmn:signal id="Sig" name="remind" />\n  <bpmn:process');
    const { plan } = await compilePlan(xml);
    expect(plan.steps.find((s) => s.id === 'R')?.boundaries).toEqual(['Late', 'Remind']);
    expect(plan.steps.find((s) => s.id === 'Late')?.boundary).toEqual({ attachedTo: 'R', interrupting: true });
    expect(plan.steps.find((s) => s.id === 'Remind')?.boundary).toEqual({
      attachedTo: 'R',
      interrupting: false,
      repeats: { steps: ['Remind_end'], flows: ['Remind_flow'] },
    });
  });

  it('given a loop of sequence flows through a receive task, then the receive task is the wait the loop needs', async () => {
    const xml = processXml(
      [
        MESSAGE,
        '<bpmn:startEvent id="S" />',
        '<bpmn:exclusiveGateway id="Merge" />',
        '<bpmn:receiveTask id="R" messageRef="Msg_Paid" />',
        '<bpmn:exclusiveGateway id="Again" default="Done" />',
        '<bpmn:endEvent id="E" />',
        flow('F1', 'S', 'Merge'),
        flow('F2', 'Merge', 'R'),
        flow('F3', 'R', 'Again'),
        flow('Back', 'Again', 'Merge', '= more'),
        flow('Done', 'Again', 'E'),
      ].join('\n'),
    ).replace(`<bpmn:process id="p" isExecutable="true">\n${MESSAGE}`, `${MESSAGE}\n<bpmn:process id="p" isExecutable="true">`);
    const { plan } = await compilePlan(xml);
    expect(plan.steps.find((s) => s.id === 'loop:Merge')?.cycle?.steps).toContain('R');
  });
});

describe('receive tasks: refusals name the element', () => {
  it('given no messageRef, then it says to give it a message', async () => {
    expect(await errorsAt(receiving(''), 'R')).toEqual([
      expect.stringMatching(
        /^Unsupported element bpmn:ReceiveTask "await payment" \(id R\): a receive task without a message .*give it a message/,
      ),
    ]);
  });

  it('given a multi-instance marker, then it says the correlation would be ambiguous', async () => {
    const xml = receiving('messageRef="Msg_Paid"', '<bpmn:multiInstanceLoopCharacteristics camunda:collection="orders" />');
    expect(await errorsAt(xml, 'R')).toEqual([
      expect.stringMatching(/\(id R\): a multi-instance receive task cannot be correlated unambiguously/),
    ]);
  });

  it('given a loop marker, then it says to draw a flow back instead', async () => {
    const xml = receiving('messageRef="Msg_Paid"', '<bpmn:standardLoopCharacteristics loopMaximum="3" />');
    expect(await errorsAt(xml, 'R')).toEqual([expect.stringMatching(/\(id R\): a receive task cannot have a loop marker/)]);
  });

  it('given instantiate="true", then it says to use a message start event', async () => {
    expect(await errorsAt(receiving('messageRef="Msg_Paid" instantiate="true"'), 'R')).toEqual([
      expect.stringMatching(/\(id R\): a receive task that starts instances .*use a message start event/),
    ]);
  });

  it('given a message without a name, then it names the receive task', async () => {
    const xml = receiving('messageRef="Msg_Paid"').replace('name="payment-received" ', '');
    expect(await errorsAt(xml, 'R')).toEqual([
      expect.stringContaining('Receive task R "await payment" has no message with a name'),
    ]);
  });

  it('given an error boundary, then it is refused naming the boundary and the receive task', async () => {
    const xml = receiving('messageRef="Msg_Paid"', '', boundary('Failed', '<bpmn:errorEventDefinition />'));
    expect(await errorsAt(xml, 'Failed')).toEqual([
      expect.stringMatching(/^Error boundary event Failed sits on receive task R: no worker runs a receive task/),
    ]);
  });

  it('given a receive task after an event-based gateway, then it says to use a message catch event', async () => {
    const xml = processXml(
      [
        '<bpmn:startEvent id="S" />',
        '<bpmn:eventBasedGateway id="G" />',
        '<bpmn:receiveTask id="R" messageRef="Msg_Paid" />',
        '<bpmn:intermediateCatchEvent id="T"><bpmn:timerEventDefinition><bpmn:timeDuration>PT1H</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:intermediateCatchEvent>',
        '<bpmn:endEvent id="E1" />',
        '<bpmn:endEvent id="E2" />',
        flow('F1', 'S', 'G'),
        flow('F2', 'G', 'R'),
        flow('F3', 'G', 'T'),
        flow('F4', 'R', 'E1'),
        flow('F5', 'T', 'E2'),
      ].join('\n'),
    ).replace('<bpmn:process', `${MESSAGE}\n  <bpmn:process`);
    expect(await errorsAt(xml, 'R')).toEqual([
      expect.stringMatching(/^Receive task R follows event-based gateway G, .*message intermediate catch event/),
    ]);
  });
});
