import { describe, expect, it } from 'vitest';
import { compileDiagnostics, compilePlan, errorsOf, flow, processXml, task } from './bpmn-helpers.ts';

const definition = (ref?: string, extra = '') =>
  `<bpmn:escalationEventDefinition ${ref ? `escalationRef="${ref}"` : ''} ${extra} />`;
const ESCALATIONS = `<bpmn:escalation id="Late" escalationCode="LATE" />
  <bpmn:escalation id="NoCode" />
  <bpmn:escalation id="Computed" escalationCode="=code" />`;

/** start -> sub [ s -> throwing -> e ] -> end, plus `outside` beside the subprocess */
function diagram(throwing: string, outside = ''): string {
  return processXml(
    [
      '<bpmn:startEvent id="S" />',
      `<bpmn:subProcess id="Sub">
        <bpmn:startEvent id="SubS" />
        ${throwing}
        <bpmn:endEvent id="SubE" />
        ${flow('g1', 'SubS', 'Throw')}
        ${flow('g2', 'Throw', 'SubE')}
      </bpmn:subProcess>`,
      '<bpmn:endEvent id="E" />',
      flow('f1', 'S', 'Sub'),
      flow('f2', 'Sub', 'E'),
      outside,
    ].join('\n'),
  ).replace('</bpmn:definitions>', `${ESCALATIONS}\n</bpmn:definitions>`);
}

const throwing = (ref = 'Late') => `<bpmn:intermediateThrowEvent id="Throw">${definition(ref)}</bpmn:intermediateThrowEvent>`;

describe('escalation events', () => {
  it('compiles a throw with its code and a boundary on the subprocess with its code and variable', async () => {
    const { plan } = await compilePlan(
      diagram(
        throwing(),
        `<bpmn:boundaryEvent id="B" attachedToRef="Sub" cancelActivity="false">${definition('Late', 'camunda:escalationCodeVariable="code"')}</bpmn:boundaryEvent>
        <bpmn:endEvent id="BE" />${flow('f3', 'B', 'BE')}`,
      ),
    );
    const step = (id: string) => plan.steps.find((s) => s.id === id);
    expect(step('Throw')).toMatchObject({ kind: 'escalationThrow', throwEscalation: { escalationCode: 'LATE' } });
    expect(step('B')).toMatchObject({
      kind: 'boundaryEvent',
      wait: { trigger: 'escalation', escalationCode: 'LATE', escalationCodeVariable: 'code' },
      boundary: { attachedTo: 'Sub', interrupting: false },
    });
  });

  it('compiles an escalation end event and a catch-all event subprocess start', async () => {
    const { plan } = await compilePlan(
      diagram(
        `<bpmn:endEvent id="Throw">${definition('Late')}</bpmn:endEvent>`,
        `<bpmn:subProcess id="Esp" triggeredByEvent="true">
          <bpmn:startEvent id="EspS">${definition()}</bpmn:startEvent>
          <bpmn:endEvent id="EspE" />${flow('e1', 'EspS', 'EspE')}
        </bpmn:subProcess>`,
      )
        .replace(flow('g2', 'Throw', 'SubE'), '')
        .replace('<bpmn:endEvent id="SubE" />', ''),
    );
    expect(plan.steps.find((s) => s.id === 'Throw')).toMatchObject({ kind: 'escalationThrow', outgoing: [] });
    expect(plan.steps.find((s) => s.id === 'EspS')).toMatchObject({
      kind: 'eventSubProcessStart',
      wait: { trigger: 'escalation' },
    });
  });

  it('refuses a throw without a code and one whose code is an expression, naming the event', async () => {
    for (const ref of ['NoCode', 'Computed']) {
      const errors = errorsOf(await compileDiagnostics(diagram(throwing(ref))));
      expect(errors).toEqual([
        expect.objectContaining({
          elementId: 'Throw',
          message: expect.stringMatching(ref === 'NoCode' ? /throws no escalation code/ : /computes its escalation code/),
        }),
      ]);
    }
  });

  it('refuses escalation boundaries on a service task and on a call activity, saying where to put them; accepts one on a user task (its holder raises escalations)', async () => {
    const onTask = processXml(
      [
        '<bpmn:startEvent id="S" />',
        task('A'),
        '<bpmn:endEvent id="E" />',
        `<bpmn:boundaryEvent id="B" attachedToRef="A">${definition()}</bpmn:boundaryEvent>`,
        '<bpmn:endEvent id="BE" />',
        flow('f1', 'S', 'A'),
        flow('f2', 'A', 'E'),
        flow('f3', 'B', 'BE'),
      ].join('\n'),
    );
    expect(errorsOf(await compileDiagnostics(onTask))).toEqual([
      expect.objectContaining({ elementId: 'B', message: expect.stringContaining('which throws no escalations') }),
    ]);
    const onUserTask = onTask.replace(task('A'), '<bpmn:userTask id="A" />');
    const { plan } = await compilePlan(onUserTask);
    expect(plan.steps.find((s) => s.id === 'B')).toMatchObject({
      boundary: { attachedTo: 'A' },
      wait: { trigger: 'escalation' },
    });
    // A called process's escalation that nothing in it catches goes on to its call activity.
    const onCall = onTask.replace(task('A'), '<bpmn:callActivity id="A" calledElement="child" />');
    expect((await compilePlan(onCall)).plan.steps.find((s) => s.id === 'B')).toMatchObject({
      boundary: { attachedTo: 'A' },
      wait: { trigger: 'escalation' },
    });
  });
});
