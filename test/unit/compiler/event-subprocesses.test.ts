// Event subprocesses compile to a scope armed by its start event's trigger; what Baton does not
// run is refused naming the element.
import { describe, expect, it } from 'vitest';
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
  it('a non-interrupting event subprocess runs its body once per firing: it and its inner steps but the start event are reset, the inner steps are its pass', async () => {
    const { plan } = await compilePlan(
      withEventSub(body(`<bpmn:startEvent id="ESP_start" isInterrupting="false">${timer}</bpmn:startEvent>`)),
    );
    expect(plan.steps.find((s) => s.id === 'ESP')?.eventSubProcess).toEqual({
      start: 'ESP_start',
      interrupting: false,
      repeats: { steps: ['ESP', 'ESP_end'], flows: ['ESP_f'] },
    });
    expect(plan.steps.find((s) => s.id === 'ESP_end')?.inLoop).toBe('ESP');
    expect(plan.steps.find((s) => s.id === 'ESP_start')?.inLoop).toBeUndefined();
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
