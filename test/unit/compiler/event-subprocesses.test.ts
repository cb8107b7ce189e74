// Event subprocesses compile to a scope armed by its start event's trigger; what Baton does not
// run is refused naming the element.
import { describe, expect, it } from 'vitest';
import { compileBpmn } from '../../../runtime/compiler/index.ts';
import { compileDiagnostics, compilePlan, errorsOf, processXml, straight } from './bpmn-helpers.ts';

const timer = '<bpmn:timerEventDefinition><bpmn:timeDuration>PT5M</bpmn:timeDuration></bpmn:timerEventDefinition>';

function withEventSub(inner: string, attributes = ''): string {
  return processXml(
    straight('<bpmn:serviceTask id="T" camunda:type="external" camunda:topic="t" />', 'T') +
      `<bpmn:subProcess id="ESP" triggeredByEvent="true" ${attributes}>${inner}</bpmn:subProcess>`,
  );
}

const body = (start: string) =>
  `${start}<bpmn:endEvent id="ESP_end" /><bpmn:sequenceFlow id="ESP_f" sourceRef="ESP_start" targetRef="ESP_end" />`;

describe('event subprocesses: compiled', () => {
  it('a timer event subprocess: its start waits for the timer, inside the event subprocess', async () => {
    const { plan } = await compilePlan(withEventSub(body(`<bpmn:startEvent id="ESP_start">${timer}</bpmn:startEvent>`)));
    expect(plan.steps.find((s) => s.id === 'ESP')).toMatchObject({
      kind: 'eventSubProcess',
      eventSubProcess: { start: 'ESP_start' },
    });
    expect(plan.steps.find((s) => s.id === 'ESP_start')).toMatchObject({
      kind: 'eventSubProcessStart',
      scope: 'ESP',
      wait: { trigger: 'timer', timer: { kind: 'duration', expression: 'PT5M' } },
    });
  });
});

describe('event subprocesses: non-interrupting', () => {
  it('a non-interrupting event subprocess runs each firing in a child instance of its body: its start event waits in the process, its body is a definition of its own that starts at a none start', async () => {
    const result = await compileBpmn(
      withEventSub(body(`<bpmn:startEvent id="ESP_start" isInterrupting="false">${timer}</bpmn:startEvent>`)),
    );
    if (!result.ok) throw new Error(JSON.stringify(result.diagnostics));
    const esp = result.plan.steps.find((s) => s.id === 'ESP');
    expect(esp?.eventSubProcess).toEqual({ start: 'ESP_start', interrupting: false });
    expect(esp?.call).toMatchObject({
      process: { key: `${result.plan.processKey}:ESP` },
      binding: 'deployment',
      inAll: true,
      outAll: true,
    });
    expect(result.plan.steps.filter((s) => s.scope === 'ESP').map((s) => [s.id, s.kind, s.outgoing])).toEqual([
      ['ESP_start', 'eventSubProcessStart', []],
    ]);
    expect(result.plan.steps.some((s) => s.id === 'ESP_end')).toBe(false);
    const bodyPlan = result.bodies?.[0]?.plan;
    expect(bodyPlan?.bodyOf).toEqual({ processKey: result.plan.processKey, elementId: 'ESP' });
    expect(bodyPlan?.steps.map((s) => [s.id, s.kind, s.wait?.trigger])).toEqual([
      ['ESP_start', 'startEvent', undefined],
      ['ESP_end', 'endEvent', undefined],
    ]);
    expect(esp?.call?.body?.fingerprint).toBe(result.bodies?.[0]?.fingerprint);
  });

  it('a non-interrupting event subprocess may hold a loop, a multi-instance subprocess and an event subprocess: its body is a process of its own', async () => {
    const inner = `<bpmn:startEvent id="ESP_start" isInterrupting="false">${timer}</bpmn:startEvent>
      <bpmn:serviceTask id="ESP_task" camunda:type="external" camunda:topic="t">
        <bpmn:standardLoopCharacteristics camunda:loopCondition="\${false}" loopMaximum="3" />
      </bpmn:serviceTask>
      <bpmn:endEvent id="ESP_end" />
      <bpmn:sequenceFlow id="ESP_a" sourceRef="ESP_start" targetRef="ESP_task" />
      <bpmn:sequenceFlow id="ESP_b" sourceRef="ESP_task" targetRef="ESP_end" />
      <bpmn:subProcess id="ESP_inner" triggeredByEvent="true">
        <bpmn:startEvent id="ESP_inner_start">${timer}</bpmn:startEvent><bpmn:endEvent id="ESP_inner_end" />
        <bpmn:sequenceFlow id="ESP_c" sourceRef="ESP_inner_start" targetRef="ESP_inner_end" />
      </bpmn:subProcess>`;
    const result = await compileBpmn(withEventSub(inner));
    expect(result.ok ? [] : result.diagnostics).toEqual([]);
  });
});

describe('event subprocesses: refused with the element id', () => {
  it.each([
    [
      'a non-interrupting error start',
      body('<bpmn:startEvent id="ESP_start" isInterrupting="false"><bpmn:errorEventDefinition /></bpmn:startEvent>'),
      'ESP_start',
      'an error always ends the scope',
    ],
    [
      'a none start',
      body('<bpmn:startEvent id="ESP_start" />'),
      'ESP_start',
      'exactly one timer, message, signal, condition, error or escalation trigger',
    ],
    ['no start', '<bpmn:endEvent id="ESP_end" />', 'ESP', 'has 0 start events'],
  ])('%s', async (_name, inner, elementId, text) => {
    const errors = errorsOf(await compileDiagnostics(withEventSub(inner)));
    expect(errors).toEqual(
      expect.arrayContaining([expect.objectContaining({ elementId, message: expect.stringContaining(text) })]),
    );
  });
});
