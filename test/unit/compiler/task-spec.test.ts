import { describe, expect, it } from 'vitest';
import type { TaskSpec } from '../../../runtime/compiler/plan.ts';
import { compileDiagnostics, compilePlan, errorsOf, processXml, readFixture, straight } from './bpmn-helpers.ts';

const ZEEBE_NS = 'xmlns:zeebe="http://camunda.org/schema/zeebe/1.0"';

async function taskOf(taskXml: string, namespaces = ''): Promise<TaskSpec | undefined> {
  const { plan } = await compilePlan(processXml(straight(taskXml, 'T'), namespaces));
  return plan.steps.find((s) => s.id === 'T')?.task;
}

async function errorsFor(taskXml: string, namespaces = '') {
  return errorsOf(await compileDiagnostics(processXml(straight(taskXml, 'T'), namespaces)));
}

function zeebeTask(definition: string, attributes = ''): string {
  return `<bpmn:serviceTask id="T" ${attributes}><bpmn:extensionElements>${definition}</bpmn:extensionElements></bpmn:serviceTask>`;
}

describe('readTaskSpec: Camunda 7 external tasks', () => {
  it('reads the topic, with retries 3 and priority 0 by default', async () => {
    expect(await taskOf('<bpmn:serviceTask id="T" camunda:type="external" camunda:topic="charge-card" />')).toEqual({
      topic: 'charge-card',
      retries: 3,
      priority: 0,
    });
  });

  it('reads camunda:taskPriority and baton:retries', async () => {
    expect(
      await taskOf(
        '<bpmn:serviceTask id="T" camunda:type="external" camunda:topic="t" camunda:taskPriority="-5" baton:retries="0" />',
      ),
    ).toEqual({ topic: 't', retries: 0, priority: -5 });
  });

  it('finds baton:retries whatever prefix the file binds to the baton namespace', async () => {
    const xml = '<bpmn:serviceTask id="T" camunda:type="external" camunda:topic="t" b:retries="9" />';
    expect((await taskOf(xml, 'xmlns:b="https://baton.dev/schema/bpmn/1.0"'))?.retries).toBe(9);
  });

  it('ignores retries of other namespaces', async () => {
    const xml = '<bpmn:serviceTask id="T" camunda:type="external" camunda:topic="t" acme:retries="9" />';
    expect((await taskOf(xml, 'xmlns:acme="https://acme.example"'))?.retries).toBe(3);
  });

  it.each([
    ['without topic', '<bpmn:serviceTask id="T" camunda:type="external" />'],
    ['with a blank topic', '<bpmn:serviceTask id="T" camunda:type="external" camunda:topic="  " />'],
    ['with a topic but not camunda:type="external"', '<bpmn:serviceTask id="T" camunda:topic="t" />'],
  ])('refuses a service task %s', async (_what, xml) => {
    expect(await errorsFor(xml)).toEqual([
      {
        elementId: 'T',
        severity: 'error',
        message: 'Service task T has no topic: set camunda:topic (with camunda:type=external) or a zeebe:taskDefinition type',
      },
    ]);
  });

  it.each([
    ['baton:retries="-1"', 'invalid baton:retries "-1"'],
    ['baton:retries="three"', 'invalid baton:retries "three"'],
    ['baton:retries="1.5"', 'invalid baton:retries "1.5"'],
    ['camunda:taskPriority="${priority}"', 'invalid camunda:taskPriority "${priority}"'],
    ['camunda:taskPriority="99999999999999999999"', 'invalid camunda:taskPriority'],
  ])('refuses %s', async (attribute, message) => {
    const errors = await errorsFor(`<bpmn:serviceTask id="T" camunda:type="external" camunda:topic="t" ${attribute} />`);
    expect(errors).toEqual([expect.objectContaining({ elementId: 'T', message: expect.stringContaining(message) })]);
  });
});

describe('readTaskSpec: Camunda 8 (zeebe) task definitions', () => {
  it('reads type as topic and retries', async () => {
    expect(await taskOf(zeebeTask('<zeebe:taskDefinition type="pay" retries="5" />'), ZEEBE_NS)).toEqual({
      topic: 'pay',
      retries: 5,
      priority: 0,
    });
  });

  it('defaults retries to 3 when zeebe gives none', async () => {
    expect((await taskOf(zeebeTask('<zeebe:taskDefinition type="pay" />'), ZEEBE_NS))?.retries).toBe(3);
  });

  it('lets baton:retries override zeebe retries', async () => {
    expect(
      (await taskOf(zeebeTask('<zeebe:taskDefinition type="pay" retries="5" />', 'baton:retries="1"'), ZEEBE_NS))?.retries,
    ).toBe(1);
  });

  it('prefers the camunda topic when a file carries both', async () => {
    const both = zeebeTask(
      '<zeebe:taskDefinition type="zeebe-topic" />',
      'camunda:type="external" camunda:topic="camunda-topic"',
    );
    expect((await taskOf(both, ZEEBE_NS))?.topic).toBe('camunda-topic');
  });

  it('refuses a type computed by an expression', async () => {
    expect(await errorsFor(zeebeTask('<zeebe:taskDefinition type="= &quot;pay-&quot; + region" />'), ZEEBE_NS)).toEqual([
      expect.objectContaining({
        elementId: 'T',
        message: expect.stringContaining('computes its zeebe:taskDefinition type with an expression'),
      }),
    ]);
  });

  it('refuses retries computed by an expression', async () => {
    expect(await errorsFor(zeebeTask('<zeebe:taskDefinition type="pay" retries="= n" />'), ZEEBE_NS)).toEqual([
      expect.objectContaining({ elementId: 'T', message: expect.stringContaining('invalid zeebe:taskDefinition retries "= n"') }),
    ]);
  });

  it('compiles the Camunda 8 order fixture', async () => {
    const { plan } = await compilePlan(readFixture('zeebe-order.bpmn'));
    const tasks = Object.fromEntries(plan.steps.filter((s) => s.task).map((s) => [s.id, s.task]));
    expect(tasks).toEqual({
      ReserveStock: { topic: 'reserve-stock', retries: 3, priority: 0 },
      ChargeCard: { topic: 'charge-card', retries: 7, priority: 0, headers: { currency: 'EUR' } },
      ReviewOrder: { topic: 'review-order', retries: 1, priority: 0 },
    });
  });
});

describe('readTaskSpec: headers for the worker', () => {
  it('reads zeebe:taskHeaders and camunda:properties in document order', async () => {
    const zeebe = zeebeTask(
      '<zeebe:taskDefinition type="t" /><zeebe:taskHeaders><zeebe:header key="sla" value="PT1H" /><zeebe:header key="tier" value="" /></zeebe:taskHeaders>',
    );
    expect((await taskOf(zeebe, ZEEBE_NS))?.headers).toEqual({ sla: 'PT1H', tier: '' });
    const camunda =
      '<bpmn:serviceTask id="T" camunda:type="external" camunda:topic="t"><bpmn:extensionElements><camunda:properties><camunda:property name="region" value="eu" /></camunda:properties></bpmn:extensionElements></bpmn:serviceTask>';
    expect((await taskOf(camunda))?.headers).toEqual({ region: 'eu' });
    expect((await taskOf('<bpmn:serviceTask id="T" camunda:type="external" camunda:topic="t" />'))?.headers).toBeUndefined();
  });

  it('refuses a header named twice, and one without a name', async () => {
    const twice = zeebeTask(
      '<zeebe:taskDefinition type="t" /><zeebe:taskHeaders><zeebe:header key="a" value="1" /><zeebe:header key="a" value="2" /></zeebe:taskHeaders>',
    );
    expect(await errorsFor(twice, ZEEBE_NS)).toEqual([
      expect.objectContaining({ message: expect.stringContaining('"a" twice') }),
    ]);
    const unnamed =
      '<bpmn:serviceTask id="T" camunda:type="external" camunda:topic="t"><bpmn:extensionElements><camunda:properties><camunda:property value="x" /></camunda:properties></bpmn:extensionElements></bpmn:serviceTask>';
    expect(await errorsFor(unnamed)).toEqual([expect.objectContaining({ message: expect.stringContaining('without a name') })]);
  });
});

describe('message throw and end events: external tasks', () => {
  const throwEvent = (definition: string, extra = '') =>
    `<bpmn:intermediateThrowEvent id="T" name="Notify">${extra}${definition}</bpmn:intermediateThrowEvent>`;

  it('reads camunda:type="external" and the topic on a message throw event definition, and its headers', async () => {
    const xml = throwEvent(
      '<bpmn:messageEventDefinition camunda:type="external" camunda:topic="send-invoice" />',
      '<bpmn:extensionElements><camunda:properties><camunda:property name="channel" value="mail" /></camunda:properties></bpmn:extensionElements>',
    );
    const { plan } = await compilePlan(processXml(straight(xml, 'T')));
    expect(plan.steps.find((s) => s.id === 'T')).toMatchObject({
      kind: 'serviceTask',
      task: { topic: 'send-invoice', retries: 3, priority: 0, headers: { channel: 'mail' } },
    });
  });

  it('reads a zeebe:taskDefinition on a message end event', async () => {
    const xml = processXml(
      [
        '<bpmn:startEvent id="S" />',
        '<bpmn:endEvent id="T"><bpmn:extensionElements><zeebe:taskDefinition type="notify" retries="5" /></bpmn:extensionElements><bpmn:messageEventDefinition /></bpmn:endEvent>',
        '<bpmn:sequenceFlow id="F" sourceRef="S" targetRef="T" />',
      ].join('\n'),
      ZEEBE_NS,
    );
    const { plan } = await compilePlan(xml);
    expect(plan.steps.find((s) => s.id === 'T')).toMatchObject({ kind: 'serviceTask', task: { topic: 'notify', retries: 5 } });
  });

  it('refuses one without an implementation, saying how a worker sends it, and one running Java code', async () => {
    expect(await errorsFor(throwEvent('<bpmn:messageEventDefinition />'))).toEqual([
      expect.objectContaining({
        elementId: 'T',
        message: expect.stringContaining('a message throw or end event is sent by a worker: set camunda:type="external"'),
      }),
    ]);
    expect(await errorsFor(throwEvent('<bpmn:messageEventDefinition camunda:class="org.acme.Send" />'))).toEqual([
      expect.objectContaining({
        message: expect.stringContaining('Message throw event T runs Java code (camunda:class "org.acme.Send")'),
      }),
    ]);
  });
});
