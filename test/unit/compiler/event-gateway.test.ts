import { describe, expect, it } from 'vitest';
import { compileDiagnostics, compilePlan, errorsOf, flow, processXml, task } from './bpmn-helpers.ts';

const message = (id: string) =>
  `<bpmn:intermediateCatchEvent id="${id}"><bpmn:messageEventDefinition id="${id}_def" messageRef="${id}_msg" /></bpmn:intermediateCatchEvent>`;
const timer = (id: string) =>
  `<bpmn:intermediateCatchEvent id="${id}"><bpmn:timerEventDefinition id="${id}_def"><bpmn:timeDuration xsi:type="bpmn:tFormalExpression">PT1H</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:intermediateCatchEvent>`;

/** start S -> gateway G -> Paid (message) -> Ship, Late (timer) -> Remind; both -> merge M -> end E, plus `extra` */
function race(opts: { gateway?: string; merge?: string; extra?: string[]; paidFlow?: string } = {}): string {
  const xml = processXml(
    [
      '<bpmn:startEvent id="S" />',
      opts.gateway ?? '<bpmn:eventBasedGateway id="G" />',
      message('Paid'),
      timer('Late'),
      task('Ship'),
      task('Remind'),
      opts.merge ?? '<bpmn:exclusiveGateway id="M" />',
      '<bpmn:endEvent id="E" />',
      flow('F0', 'S', 'G'),
      opts.paidFlow ?? flow('ToPaid', 'G', 'Paid'),
      flow('ToLate', 'G', 'Late'),
      flow('F1', 'Paid', 'Ship'),
      flow('F2', 'Late', 'Remind'),
      flow('F3', 'Ship', 'M'),
      flow('F4', 'Remind', 'M'),
      flow('F5', 'M', 'E'),
      ...(opts.extra ?? []),
    ].join('\n'),
  );
  return xml.replace('<bpmn:process', '<bpmn:message id="Paid_msg" name="paid" />\n  <bpmn:process');
}

describe('event-based gateways', () => {
  it('compile to a step that races the catch events after it, merged downstream without warnings', async () => {
    const { plan, warnings } = await compilePlan(race());
    expect(plan.steps.find((s) => s.id === 'G')).toMatchObject({ kind: 'eventBasedGateway', outgoing: ['ToPaid', 'ToLate'] });
    expect(plan.steps.find((s) => s.id === 'Paid')).toMatchObject({ kind: 'catchEvent', wait: { trigger: 'message' } });
    expect(warnings).toEqual([]);
  });

  it('refuse a parallel join of the two paths: only one of them is ever taken', async () => {
    const errors = errorsOf(await compileDiagnostics(race({ merge: '<bpmn:parallelGateway id="M" />' })));
    expect(errors).toEqual([
      expect.objectContaining({ elementId: 'M', message: expect.stringContaining('never taken together') }),
    ]);
  });

  it('refuse a target that is not a catch event, naming it and saying what to put there', async () => {
    const xml = processXml(
      [
        '<bpmn:startEvent id="S" />',
        '<bpmn:eventBasedGateway id="G" />',
        task('Ship'),
        timer('Late'),
        '<bpmn:endEvent id="E1" />',
        '<bpmn:endEvent id="E2" />',
        flow('F0', 'S', 'G'),
        flow('F1', 'G', 'Ship'),
        flow('F2', 'G', 'Late'),
        flow('F3', 'Ship', 'E1'),
        flow('F4', 'Late', 'E2'),
      ].join('\n'),
    );
    expect(errorsOf(await compileDiagnostics(xml))).toEqual([
      expect.objectContaining({
        elementId: 'Ship',
        message: expect.stringContaining(
          'follows event-based gateway G, which waits for events: put a timer, message or signal intermediate catch event between them',
        ),
      }),
    ]);
  });

  it('refuse a catch event of the race that other flows also reach', async () => {
    const errors = errorsOf(
      await compileDiagnostics(
        race({
          extra: [
            '<bpmn:startEvent id="S2"><bpmn:timerEventDefinition id="S2_def" /></bpmn:startEvent>',
            flow('Other', 'S2', 'Paid'),
          ],
        }),
      ),
    );
    expect(errors).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ elementId: 'Paid', message: expect.stringContaining('has other incoming flows (Other)') }),
      ]),
    );
  });

  it('refuse a gateway with one outgoing flow', async () => {
    const xml = processXml(
      [
        '<bpmn:startEvent id="S" />',
        '<bpmn:eventBasedGateway id="G" />',
        timer('Late'),
        '<bpmn:endEvent id="E" />',
        flow('F0', 'S', 'G'),
        flow('F1', 'G', 'Late'),
        flow('F2', 'Late', 'E'),
      ].join('\n'),
    );
    expect(errorsOf(await compileDiagnostics(xml))).toEqual([
      expect.objectContaining({ elementId: 'G', message: expect.stringContaining('has one outgoing flow') }),
    ]);
  });

  it('warn that a condition on a flow leaving the gateway is ignored', async () => {
    const { warnings } = await compilePlan(race({ paidFlow: flow('ToPaid', 'G', 'Paid', '${paid}') }));
    expect(warnings).toEqual([
      expect.objectContaining({ elementId: 'ToPaid', severity: 'warning', message: expect.stringContaining('is ignored') }),
    ]);
  });

  it('refuse a gateway that would start instances', async () => {
    const errors = errorsOf(
      await compileDiagnostics(race({ gateway: '<bpmn:eventBasedGateway id="G" eventGatewayType="Parallel" />' })),
    );
    expect(errors).toEqual([expect.objectContaining({ elementId: 'G', message: expect.stringContaining('starts instances') })]);
  });
});
