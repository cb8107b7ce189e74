import { describe, expect, it } from 'vitest';
import { compileDiagnostics, compilePlan, errorsOf, flow, processXml } from './bpmn-helpers.ts';

const ZEEBE = 'xmlns:zeebe="http://camunda.org/schema/zeebe/1.0"';

const listeners = (...items: [eventType: string, type: string, retries?: string][]) =>
  `<zeebe:executionListeners>${items
    .map(([e, t, r]) => `<zeebe:executionListener eventType="${e}" type="${t}"${r !== undefined ? ` retries="${r}"` : ''} />`)
    .join('')}</zeebe:executionListeners>`;

const zeebeTask = (id: string, extra = '') =>
  `<bpmn:serviceTask id="${id}"><bpmn:extensionElements><zeebe:taskDefinition type="${id}" />${extra}</bpmn:extensionElements></bpmn:serviceTask>`;

/** S -> A -> E, A carrying `extra` in its extension elements */
const straight = (extra: string, task = zeebeTask('A', extra)) =>
  processXml(
    ['<bpmn:startEvent id="S" />', task, '<bpmn:endEvent id="E" />', flow('f1', 'S', 'A'), flow('f2', 'A', 'E')].join('\n'),
    ZEEBE,
  );

describe('execution listeners', () => {
  it('draws each job listener as an external task step before or after its element, in document order', async () => {
    const { plan, warnings } = await compilePlan(
      straight(listeners(['start', 'check-stock', '5'], ['start', 'reserve'], ['end', 'audit'])),
    );
    const step = (id: string) => plan.steps.find((s) => s.id === id);
    expect(step('listener:A:start:1')).toMatchObject({
      kind: 'serviceTask',
      task: { topic: 'check-stock', retries: 5 },
      incoming: ['f1'],
      outgoing: ['listener:A:start:1->listener:A:start:2'],
    });
    expect(step('listener:A:start:2')).toMatchObject({
      task: { topic: 'reserve', retries: 3 },
      outgoing: ['listener:A:start:2->A'],
    });
    expect(step('A')).toMatchObject({ incoming: ['listener:A:start:2->A'], outgoing: ['A->listener:A:end:1'] });
    expect(step('listener:A:end:1')).toMatchObject({ task: { topic: 'audit' }, outgoing: ['f2'] });
    expect(plan.flows.find((f) => f.id === 'f2')).toMatchObject({ source: 'listener:A:end:1', target: 'E' });
    expect(warnings.filter((w) => w.message.includes('listener'))).toEqual([]);
  });

  it('refuses a Camunda 7 listener naming the element, and one on a flow or the process', async () => {
    const java = straight(
      '',
      '<bpmn:serviceTask id="A" camunda:type="external" camunda:topic="a"><bpmn:extensionElements><camunda:executionListener class="com.acme.Audit" event="start" /></bpmn:extensionElements></bpmn:serviceTask>',
    );
    expect(errorsOf(await compileDiagnostics(java))).toEqual([
      expect.objectContaining({
        elementId: 'A',
        message: expect.stringContaining('runs Java code or an expression inside Camunda 7'),
      }),
    ]);
    const onFlow = java
      .replace('<camunda:executionListener class="com.acme.Audit" event="start" />', '')
      .replace(
        flow('f2', 'A', 'E'),
        '<bpmn:sequenceFlow id="f2" sourceRef="A" targetRef="E"><bpmn:extensionElements><camunda:executionListener event="take"><camunda:script scriptFormat="groovy">x</camunda:script></camunda:executionListener></bpmn:extensionElements></bpmn:sequenceFlow>',
      );
    expect(errorsOf(await compileDiagnostics(onFlow))).toEqual([
      expect.objectContaining({ elementId: 'f2', message: expect.stringContaining('sequence flow f2 runs a groovy script') }),
    ]);
    const onProcess = straight('').replace(
      '<bpmn:startEvent id="S" />',
      `<bpmn:extensionElements>${listeners(['start', 'p'])}</bpmn:extensionElements><bpmn:startEvent id="S" />`,
    );
    expect(errorsOf(await compileDiagnostics(onProcess))).toEqual([
      expect.objectContaining({
        elementId: 'p',
        message: expect.stringContaining('Execution listeners on the process are not run'),
      }),
    ]);
  });

  it('draws a Camunda 7 inline JavaScript listener as a script task step; other languages, resources and events are refused', async () => {
    const camundaListener = (event: string, format: string, body: string, extra = '') =>
      `<camunda:executionListener event="${event}"><camunda:script scriptFormat="${format}"${extra}>${body}</camunda:script></camunda:executionListener>`;
    const task = (listenersXml: string) =>
      `<bpmn:serviceTask id="A" camunda:type="external" camunda:topic="a"><bpmn:extensionElements>${listenersXml}</bpmn:extensionElements></bpmn:serviceTask>`;
    const { plan } = await compilePlan(
      straight(
        '',
        task(
          camundaListener('start', 'javascript', 'execution.setVariable("started", true);') +
            camundaListener('end', 'JavaScript', 'execution.setVariable("ended", true);'),
        ),
      ),
    );
    const step = (id: string) => plan.steps.find((s) => s.id === id);
    expect(step('listener:A:start:1')).toMatchObject({
      kind: 'scriptTask',
      script: { language: 'javascript', source: 'execution.setVariable("started", true);' },
      incoming: ['f1'],
      outgoing: ['listener:A:start:1->A'],
    });
    expect(step('listener:A:end:1')).toMatchObject({ kind: 'scriptTask', outgoing: ['f2'] });
    const refused = straight(
      '',
      task(
        camundaListener('start', 'groovy', 'x') +
          camundaListener('end', 'javascript', '', ' resource="audit.js"') +
          camundaListener('take', 'javascript', 'x'),
      ),
    );
    expect((await compileDiagnostics(refused)).filter((d) => d.severity === 'error').map((d) => d.message)).toEqual([
      expect.stringContaining('runs a groovy script, which Baton does not run: write it in JavaScript'),
      expect.stringContaining('runs the script in the resource "audit.js"'),
      expect.stringContaining('listens to "take": Baton runs start and end listeners'),
    ]);
  });

  it('draws a JavaScript take listener on a flow as a script step the flow leads to; the flow keeps its condition', async () => {
    const take = (body: string, event = '') =>
      `<bpmn:extensionElements><camunda:executionListener${event}><camunda:script scriptFormat="javascript">${body}</camunda:script></camunda:executionListener></bpmn:extensionElements>`;
    const xml = processXml(
      [
        '<bpmn:startEvent id="S" />',
        '<bpmn:exclusiveGateway id="G" default="f3" />',
        '<bpmn:serviceTask id="A" camunda:type="external" camunda:topic="a" />',
        '<bpmn:endEvent id="E" />',
        flow('f1', 'S', 'G'),
        `<bpmn:sequenceFlow id="f2" sourceRef="G" targetRef="A">${take('execution.setVariable("big", true);')}<bpmn:conditionExpression xsi:type="bpmn:tFormalExpression">\${total > 100}</bpmn:conditionExpression></bpmn:sequenceFlow>`,
        flow('f3', 'G', 'A'),
        flow('f4', 'A', 'E'),
      ].join('\n'),
    );
    const { plan } = await compilePlan(xml);
    expect(plan.flows.find((f) => f.id === 'f2')).toMatchObject({
      source: 'G',
      target: 'listener:f2:take:1',
      condition: { feel: '(if total = null then false else (if total instance of string then number(total) else total) > 100)' },
    });
    expect(plan.steps.find((s) => s.id === 'listener:f2:take:1')).toMatchObject({
      kind: 'scriptTask',
      incoming: ['f2'],
      outgoing: ['listener:f2:take:1->A'],
    });
    expect(plan.steps.find((s) => s.id === 'A')?.incoming.sort()).toEqual(['f3', 'listener:f2:take:1->A']);
    const wrongEvent = xml.replace('<camunda:executionListener>', '<camunda:executionListener event="start">');
    expect(errorsOf(await compileDiagnostics(wrongEvent))).toEqual([
      expect.objectContaining({
        elementId: 'f2',
        message: expect.stringContaining('listens to "start": Baton runs take listeners here'),
      }),
    ]);
  });

  it('refuses listeners that do not fit their element or are not complete, saying what to do', async () => {
    const cases: [string, string, RegExp][] = [
      [listeners(['start', '=topic']), zeebeTask('A', listeners(['start', '=topic'])), /computes its job type/],
      ['', zeebeTask('A', listeners(['begin', 'x'])), /has eventType "begin"/],
      ['', zeebeTask('A', listeners(['start', 'x', 'many'])), /has retries "many"/],
      ['', zeebeTask('A', listeners(['start', ''])), /has no job type/],
    ];
    for (const [, task, message] of cases) {
      expect(errorsOf(await compileDiagnostics(straight('', task)))).toEqual([
        expect.objectContaining({ elementId: 'A', message: expect.stringMatching(message) }),
      ]);
    }
    const onEnd = straight('').replace(
      '<bpmn:endEvent id="E" />',
      `<bpmn:endEvent id="E"><bpmn:extensionElements>${listeners(['end', 'x'])}</bpmn:extensionElements></bpmn:endEvent>`,
    );
    expect(errorsOf(await compileDiagnostics(onEnd))).toEqual([
      expect.objectContaining({ elementId: 'E', message: expect.stringContaining('end listeners do not fit here') }),
    ]);
    const onGateway = processXml(
      [
        '<bpmn:startEvent id="S" />',
        `<bpmn:parallelGateway id="G"><bpmn:extensionElements>${listeners(['start', 'x'])}</bpmn:extensionElements></bpmn:parallelGateway>`,
        '<bpmn:endEvent id="E" />',
        flow('f1', 'S', 'G'),
        flow('f2', 'G', 'E'),
      ].join('\n'),
      ZEEBE,
    );
    expect(errorsOf(await compileDiagnostics(onGateway))).toEqual([
      expect.objectContaining({ elementId: 'G', message: expect.stringContaining('Baton runs them on tasks, subprocesses') }),
    ]);
  });

  it('puts a start event end listener and an end event start listener on the path, and listeners inside a loop in its body', async () => {
    const xml = processXml(
      [
        `<bpmn:startEvent id="S"><bpmn:extensionElements>${listeners(['end', 'opened'])}</bpmn:extensionElements></bpmn:startEvent>`,
        zeebeTask('A', listeners(['start', 'before-a'])),
        '<bpmn:exclusiveGateway id="Again" default="f4" />',
        `<bpmn:endEvent id="E"><bpmn:extensionElements>${listeners(['start', 'closing'])}</bpmn:extensionElements></bpmn:endEvent>`,
        flow('f1', 'S', 'A'),
        flow('f2', 'A', 'Again'),
        flow('f3', 'Again', 'A', '= again'),
        flow('f4', 'Again', 'E'),
      ].join('\n'),
      ZEEBE,
    );
    const { plan } = await compilePlan(xml);
    const step = (id: string) => plan.steps.find((s) => s.id === id);
    expect(step('S')?.outgoing).toEqual(['S->listener:S:end:1']);
    expect(step('listener:S:end:1')?.outgoing).toEqual(['f1']);
    expect(step('listener:E:start:1')).toMatchObject({ incoming: ['f4'], outgoing: ['listener:E:start:1->E'] });
    // The loop's head is the start listener: the token passes it on every pass, as it enters A.
    expect(step('listener:A:start:1')).toMatchObject({ incoming: ['f1', 'f3'], inLoop: expect.stringMatching(/^loop:/) });
  });
});
