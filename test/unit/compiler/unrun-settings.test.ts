import { describe, expect, it } from 'vitest';
import { compilePlan, processXml, straight, task } from './bpmn-helpers.ts';

const ZEEBE = 'xmlns:zeebe="http://camunda.org/schema/zeebe/1.0"';

async function warningsOf(xml: string): Promise<string[]> {
  const { warnings } = await compilePlan(xml);
  return warnings.map((w) => `${w.elementId}: ${w.message}`);
}

describe('settings Baton does not run', () => {
  it('given a task with only what Baton reads, then nothing is said', async () => {
    expect(await warningsOf(processXml(straight(task('T', 'work', 'baton:retries="2" camunda:taskPriority="5"'), 'T')))).toEqual(
      [],
    );
  });

  it("given field injections and a retry cycle, then each is named on its element, once; the task's mappings run", async () => {
    const body = `<bpmn:serviceTask id="T" name="Charge card" camunda:type="external" camunda:topic="charge" camunda:jobPriority="3">
      <bpmn:extensionElements>
        <camunda:inputOutput><camunda:inputParameter name="amount">\${total}</camunda:inputParameter><camunda:outputParameter name="x">1</camunda:outputParameter></camunda:inputOutput>
        <camunda:field name="f"><camunda:string>v</camunda:string></camunda:field>
        <camunda:failedJobRetryTimeCycle>R3/PT1M</camunda:failedJobRetryTimeCycle>
      </bpmn:extensionElements>
    </bpmn:serviceTask>`;
    const warnings = await warningsOf(processXml(straight(body, 'T')));
    expect(warnings).toHaveLength(3);
    expect(warnings.every((w) => w.startsWith('T: T "Charge card": '))).toBe(true);
    expect(warnings.join('\n')).not.toMatch(/input\/output mappings/);
    expect(warnings.join('\n')).toMatch(/field injections/);
    expect(warnings.join('\n')).toMatch(/retry time cycle is not read: set Retries in the Baton group \(baton:retries\)/);
    expect(warnings.join('\n')).toMatch(/camunda:jobPriority/);
  });

  it("given a message subscription key, then it is named; the task's input mappings and headers run, headers elsewhere are named", async () => {
    const body = `<bpmn:serviceTask id="T">
      <bpmn:extensionElements>
        <zeebe:taskDefinition type="charge" />
        <zeebe:ioMapping><zeebe:input source="=total" target="amount" /></zeebe:ioMapping>
        <zeebe:taskHeaders><zeebe:header key="k" value="v" /></zeebe:taskHeaders>
      </bpmn:extensionElements>
    </bpmn:serviceTask>`;
    const xml = processXml(straight(body, 'T'), ZEEBE)
      .replace(
        '<bpmn:endEvent id="E" />',
        '<bpmn:endEvent id="E"><bpmn:extensionElements><camunda:properties><camunda:property name="a" value="b" /></camunda:properties></bpmn:extensionElements></bpmn:endEvent>',
      )
      .replace(
        '</bpmn:definitions>',
        `<bpmn:message id="M" name="paid"><bpmn:extensionElements><zeebe:subscription correlationKey="=orderId" /></bpmn:extensionElements></bpmn:message>
</bpmn:definitions>`,
      );
    const warnings = await warningsOf(xml);
    expect(warnings).toEqual([
      'E: E: extension properties are not read here (Baton hands them to the workers of external tasks only)',
      expect.stringMatching(/^M: M "paid": the subscription correlation key is not read: only intermediate catch events/),
    ]);
  });

  it('given input mappings on an event subprocess start or mappings on a compensation handler, then each is still named, and the event subprocess runs its own', async () => {
    const mapping =
      '<bpmn:extensionElements><camunda:inputOutput><camunda:inputParameter name="x">1</camunda:inputParameter></camunda:inputOutput></bpmn:extensionElements>';
    const body = [
      '<bpmn:startEvent id="S" />',
      `<bpmn:subProcess id="Sub" triggeredByEvent="true">${mapping}`,
      `<bpmn:startEvent id="S2" isInterrupting="false">${mapping}<bpmn:timerEventDefinition><bpmn:timeDuration>PT1H</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:startEvent>`,
      `<bpmn:serviceTask id="W" camunda:type="external" camunda:topic="w" /><bpmn:endEvent id="E2" />`,
      '<bpmn:sequenceFlow id="F2" sourceRef="S2" targetRef="W" /><bpmn:sequenceFlow id="F5" sourceRef="W" targetRef="E2" /></bpmn:subProcess>',
      `<bpmn:serviceTask id="T" camunda:type="external" camunda:topic="t" />`,
      '<bpmn:boundaryEvent id="B" attachedToRef="T"><bpmn:compensateEventDefinition /></bpmn:boundaryEvent>',
      `<bpmn:serviceTask id="Undo" camunda:type="external" camunda:topic="undo" isForCompensation="true">${mapping}</bpmn:serviceTask>`,
      '<bpmn:endEvent id="E" />',
      '<bpmn:sequenceFlow id="F1" sourceRef="S" targetRef="T" />',
      '<bpmn:sequenceFlow id="F4" sourceRef="T" targetRef="E" />',
    ].join('\n');
    const xml = processXml(body).replace(
      '</bpmn:process>',
      '<bpmn:association id="A" associationDirection="One" sourceRef="B" targetRef="Undo" /></bpmn:process>',
    );
    const warnings = await warningsOf(xml);
    expect(warnings.filter((w) => /mappings/.test(w)).map((w) => w.split(':')[0])).toEqual(['S2', 'Undo']);
    expect(warnings.find((w) => w.startsWith('S2'))).toMatch(/input mappings are not run on .* an event subprocess's start/);
    expect(warnings.find((w) => w.startsWith('Undo'))).toMatch(
      /not run on this element \(Baton runs them on tasks, subprocesses, call activities, start and end events/,
    );
  });

  it('given process-level settings, then they are named on the process', async () => {
    const xml = processXml(straight(task('T'), 'T')).replace(
      '<bpmn:process id="p" isExecutable="true">',
      '<bpmn:process id="p" isExecutable="true" camunda:historyTimeToLive="180" camunda:candidateStarterGroups="sales">',
    );
    const warnings = await warningsOf(xml);
    expect(warnings).toEqual([
      expect.stringMatching(/^p: p: candidate starter groups/),
      expect.stringMatching(/^p: p: the history time to live/),
    ]);
  });
});
