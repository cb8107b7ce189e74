import { describe, expect, it } from 'vitest';
import { compileDiagnostics, compilePlan, errorsOf, flow, processXml, readFixture, task } from './bpmn-helpers.ts';

/** start -> gateway G (with `gatewayAttributes`) -> A | B -> ends */
function split(
  gateway: 'exclusiveGateway' | 'inclusiveGateway' | 'parallelGateway',
  toA: string | undefined,
  toB: string | undefined,
  gatewayAttributes = '',
): string {
  return processXml(
    [
      '<bpmn:startEvent id="S" />',
      `<bpmn:${gateway} id="G" ${gatewayAttributes} />`,
      task('A'),
      task('B'),
      '<bpmn:endEvent id="EA" />',
      '<bpmn:endEvent id="EB" />',
      flow('F0', 'S', 'G'),
      flow('ToA', 'G', 'A', toA),
      flow('ToB', 'G', 'B', toB),
      flow('FA', 'A', 'EA'),
      flow('FB', 'B', 'EB'),
    ].join('\n'),
  );
}

/** The FEEL a flow's condition compiled to. */
function feelOf(flows: { id: string; condition?: object }[], id: string): string | undefined {
  return (flows.find((f) => f.id === id)?.condition as { feel?: string } | undefined)?.feel;
}

/** The flow ToA of `split` with a condition in `language`. */
function scripted(language: string, body: string): string {
  return split('exclusiveGateway', undefined, undefined, 'default="ToB"').replace(
    '<bpmn:sequenceFlow id="ToA" sourceRef="G" targetRef="A" />',
    `<bpmn:sequenceFlow id="ToA" sourceRef="G" targetRef="A"><bpmn:conditionExpression xsi:type="bpmn:tFormalExpression" language="${language}">${body}</bpmn:conditionExpression></bpmn:sequenceFlow>`,
  );
}

describe('compileConditions', () => {
  it('translates a JUEL condition of an exclusive gateway and keeps the source', async () => {
    const { plan } = await compilePlan(readFixture('order.bpmn'));
    // EL compares as FEEL does not: null is below nothing, and a text holding a number is that number.
    expect(plan.flows.find((f) => f.id === 'Flow_Review')?.condition).toEqual({
      feel: '(if total = null then false else (if total instance of string then number(total) else total) > 100)',
      source: '${total > 100}',
    });
    expect(plan.steps.find((s) => s.id === 'Gateway_Review')?.defaultFlow).toBe('Flow_NoReview');
  });

  it('keeps FEEL conditions (Camunda 8) without the leading "="', async () => {
    const { plan } = await compilePlan(readFixture('zeebe-order.bpmn'));
    expect(plan.flows.find((f) => f.id === 'NeedsReview')?.condition).toEqual({ feel: 'total > 100', source: '= total > 100' });
  });

  it('compiles the conditions of an inclusive gateway, and its default flow', async () => {
    const { plan, warnings } = await compilePlan(readFixture('inclusive.bpmn'));
    expect(warnings).toEqual([]);
    expect(feelOf(plan.flows, 'ToMail')).toBe('customer.email != null');
    expect(feelOf(plan.flows, 'ToSms')).toMatch(
      /^not\(\(customer\.phone = null or .*\)\) and \(if customer\.smsOptIn = null then false else .* else customer\.smsOptIn\)$/,
    );
    expect(plan.steps.find((s) => s.id === 'Split')?.defaultFlow).toBe('ToLetter');
  });

  it('reads a condition written without xsi:type', async () => {
    const xml = split('exclusiveGateway', undefined, undefined, 'default="ToB"').replace(
      '<bpmn:sequenceFlow id="ToA" sourceRef="G" targetRef="A" />',
      '<bpmn:sequenceFlow id="ToA" sourceRef="G" targetRef="A"><bpmn:conditionExpression>${ok}</bpmn:conditionExpression></bpmn:sequenceFlow>',
    );
    expect(feelOf((await compilePlan(xml)).plan.flows, 'ToA')).toBe('ok');
  });

  it('refuses a condition that does not parse, on the flow id', async () => {
    expect(errorsOf(await compileDiagnostics(split('exclusiveGateway', '${a >}', undefined, 'default="ToB"')))).toEqual([
      {
        elementId: 'ToA',
        severity: 'error',
        message: expect.stringMatching(
          /^Condition of sequence flow ToA cannot be used: JUEL condition "a >": the expression ends too early/,
        ),
      },
    ]);
    expect(errorsOf(await compileDiagnostics(split('exclusiveGateway', '= a >', undefined, 'default="ToB"')))).toEqual([
      expect.objectContaining({ elementId: 'ToA', message: expect.stringContaining('FEEL expression "a >" is incomplete') }),
    ]);
  });

  it('refuses a condition outside the JUEL subset, naming what is unsupported', async () => {
    const errors = errorsOf(await compileDiagnostics(split('exclusiveGateway', '${order.isBig()}', '${list[i] > 2}')));
    expect(errors.map((e) => [e.elementId, e.message.match(/method and function calls|index access takes/)?.[0]])).toEqual([
      ['ToA', 'method and function calls'],
      ['ToB', 'index access takes'],
    ]);
  });

  it('refuses script conditions in languages other than JavaScript, saying which to write instead', async () => {
    expect(errorsOf(await compileDiagnostics(scripted('groovy', 'a &gt; 1')))).toEqual([
      expect.objectContaining({
        elementId: 'ToA',
        message: expect.stringContaining(
          'is a groovy script, which Baton does not run: write it in JavaScript (language="javascript")',
        ),
      }),
    ]);
  });

  it('keeps a JavaScript condition as written, for the sandbox to run', async () => {
    const body = 'execution.getVariable("amount") &gt; 100\n  &amp;&amp; approved';
    const { plan } = await compilePlan(scripted('JavaScript', body));
    expect(plan.flows.find((f) => f.id === 'ToA')?.condition).toEqual({
      javascript: 'execution.getVariable("amount") > 100\n  && approved',
      source: 'execution.getVariable("amount") > 100\n  && approved',
    });
  });

  it('keeps a conditional event or a completion condition in JavaScript, and refuses one in Groovy naming the element', async () => {
    const catching = (language: string) =>
      processXml(
        [
          '<bpmn:startEvent id="S" />',
          `<bpmn:intermediateCatchEvent id="C"><bpmn:conditionalEventDefinition><bpmn:condition xsi:type="bpmn:tFormalExpression" language="${language}">total &gt; 100</bpmn:condition></bpmn:conditionalEventDefinition></bpmn:intermediateCatchEvent>`,
          `<bpmn:serviceTask id="M" camunda:type="external" camunda:topic="m"><bpmn:multiInstanceLoopCharacteristics camunda:collection="\${items}"><bpmn:completionCondition xsi:type="bpmn:tFormalExpression" language="${language}">nrOfCompletedInstances &gt;= 2</bpmn:completionCondition></bpmn:multiInstanceLoopCharacteristics></bpmn:serviceTask>`,
          '<bpmn:endEvent id="E" />',
          flow('F1', 'S', 'C'),
          flow('F2', 'C', 'M'),
          flow('F3', 'M', 'E'),
        ].join('\n'),
      );
    const { plan } = await compilePlan(catching('javascript'));
    expect(plan.steps.find((s) => s.id === 'C')?.wait).toEqual({
      trigger: 'conditional',
      condition: { javascript: 'total > 100', source: 'total > 100' },
    });
    expect(plan.steps.find((s) => s.id === 'M')?.multiInstance?.completionCondition).toEqual({
      javascript: 'nrOfCompletedInstances >= 2',
      source: 'nrOfCompletedInstances >= 2',
    });
    expect(errorsOf(await compileDiagnostics(catching('groovy'))).map((e) => [e.elementId, e.message])).toEqual([
      ['C', expect.stringContaining('Condition of conditional event C is a groovy script, which Baton does not run')],
      ['M', expect.stringContaining('completionCondition is a groovy script, which Baton does not run')],
    ]);
  });

  it('refuses a JavaScript condition that does not parse, with the line and column', async () => {
    expect(errorsOf(await compileDiagnostics(scripted('javascript', 'amount &gt;\n  (100')))).toEqual([
      expect.objectContaining({
        elementId: 'ToA',
        message: expect.stringMatching(/^Condition of sequence flow ToA is JavaScript that does not parse at line 2, column \d+/),
      }),
    ]);
  });

  it('refuses an empty condition', async () => {
    expect(errorsOf(await compileDiagnostics(split('exclusiveGateway', '  ', undefined, 'default="ToB"')))).toEqual([
      expect.objectContaining({ elementId: 'ToA', message: expect.stringContaining('The condition is empty') }),
    ]);
  });

  it('warns and drops a condition on a flow leaving a parallel gateway', async () => {
    const { plan, warnings } = await compilePlan(split('parallelGateway', '${a}', undefined));
    expect(warnings).toEqual([
      {
        elementId: 'ToA',
        severity: 'warning',
        message: expect.stringContaining(
          'leaves parallel gateway G, which takes every outgoing flow: its condition "${a}" is ignored',
        ),
      },
    ]);
    expect(plan.flows.find((f) => f.id === 'ToA')).not.toHaveProperty('condition');
  });

  it('warns and drops a condition on a default flow', async () => {
    const { plan, warnings } = await compilePlan(split('exclusiveGateway', '${a}', '${b}', 'default="ToB"'));
    expect(warnings).toEqual([
      {
        elementId: 'ToB',
        severity: 'warning',
        message: expect.stringContaining('Default flow ToB of gateway G has a condition "${b}", which is ignored'),
      },
    ]);
    expect(plan.flows.find((f) => f.id === 'ToB')).not.toHaveProperty('condition');
  });

  it('given conditional flows out of a task, then an inclusive split is drawn after it that the flows leave from, keeping their ids', async () => {
    const xml = processXml(
      [
        '<bpmn:startEvent id="S" />',
        task('T', 'T', 'default="ToC"'),
        '<bpmn:endEvent id="A" />',
        '<bpmn:endEvent id="B" />',
        '<bpmn:endEvent id="C" />',
        flow('F1', 'S', 'T'),
        flow('ToA', 'T', 'A', '${a}'),
        flow('ToB', 'T', 'B'),
        flow('ToC', 'T', 'C'),
      ].join('\n'),
    );
    const { plan, warnings } = await compilePlan(xml);
    expect(plan.steps.find((s) => s.id === 'T')?.outgoing).toEqual(['T->split:T']);
    expect(plan.steps.find((s) => s.id === 'split:T')).toMatchObject({
      kind: 'inclusiveGateway',
      conditionalFlowsOf: 'T',
      incoming: ['T->split:T'],
      outgoing: ['ToA', 'ToB', 'ToC'],
      defaultFlow: 'ToC',
    });
    expect(plan.flows.find((f) => f.id === 'ToA')).toMatchObject({ source: 'split:T', condition: { feel: 'a' } });
    // An unconditional flow beside conditional ones is always taken, as in Camunda 7: nothing to warn about.
    expect(warnings).toEqual([]);
  });

  it('given only conditional flows out of an event and no default, then it is told that the path ends when none holds', async () => {
    const xml = processXml(['<bpmn:startEvent id="S" />', '<bpmn:endEvent id="E" />', flow('F1', 'S', 'E', '${a}')].join('\n'));
    const { plan, warnings } = await compilePlan(xml);
    expect(plan.steps.find((s) => s.id === 'split:S')?.outgoing).toEqual(['F1']);
    expect(warnings).toEqual([
      expect.objectContaining({
        elementId: 'S',
        message: expect.stringMatching(/leaves only through conditional flows \(F1\): when none holds, its path ends there/),
      }),
    ]);
  });

  it('warns about a non-default flow without condition leaving a choosing gateway', async () => {
    const { warnings } = await compilePlan(split('exclusiveGateway', '${a}', undefined));
    expect(warnings).toEqual([
      {
        elementId: 'ToB',
        severity: 'warning',
        message:
          'Sequence flow ToB leaves gateway G without a condition, so it is always taken: add a condition or make it the default flow',
      },
    ]);
  });

  it('does not warn for the single outgoing flow of a merging gateway', async () => {
    expect((await compilePlan(readFixture('inclusive.bpmn'))).warnings).toEqual([]);
  });
});
