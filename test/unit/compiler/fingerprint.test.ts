import { describe, expect, it } from 'vitest';
import { fingerprintPlan } from '../../../runtime/compiler/index.ts';
import type { Plan } from '../../../runtime/compiler/plan.ts';
import { compilePlan, readFixture } from './bpmn-helpers.ts';

const order = readFixture('order.bpmn');

async function fingerprintOf(xml: string): Promise<string> {
  return (await compilePlan(xml)).fingerprint;
}

/** The order file moved around, renamed and retuned, with the same steps and wiring. */
function cosmeticVariant(xml: string): string {
  return xml
    .replace(/(x|y|width|height)="(\d+)"/g, (_all, attribute: string, value: string) => `${attribute}="${Number(value) * 2 + 7}"`)
    .replace(/ name="[^"]*"/g, ' name="Renamed"')
    .replace('baton:retries="5"', 'baton:retries="9"')
    .replace('camunda:taskPriority="10"', 'camunda:taskPriority="1"')
    .replace('camunda:topic="charge-card"', 'camunda:topic="charge-card-v2"')
    .replace('${total &gt; 100}', '${total &gt; 500}')
    .replace(/<bpmn:documentation>[^<]*<\/bpmn:documentation>/, '');
}

describe('fingerprintPlan', () => {
  it('is a SHA-256 hex digest, returned by compileBpmn', async () => {
    const { plan, fingerprint } = await compilePlan(order);
    expect(fingerprint).toMatch(/^[0-9a-f]{64}$/);
    expect(fingerprintPlan(plan)).toBe(fingerprint);
  });

  it('ignores layout, names, documentation, retries, priority, topics and conditions', async () => {
    const variant = cosmeticVariant(order);
    expect(variant).not.toBe(order);
    expect(await fingerprintOf(variant)).toBe(await fingerprintOf(order));
  });

  it('changes when a step is added', async () => {
    const withStep = order
      .replace(
        '<bpmn:endEvent id="EndEvent_Reviewed"',
        '<bpmn:serviceTask id="Task_Archive" camunda:type="external" camunda:topic="archive" /><bpmn:endEvent id="EndEvent_Reviewed"',
      )
      .replace(
        '<bpmn:sequenceFlow id="Flow_Reviewed" sourceRef="Task_ReviewOrder" targetRef="EndEvent_Reviewed" />',
        '<bpmn:sequenceFlow id="Flow_Reviewed" sourceRef="Task_ReviewOrder" targetRef="Task_Archive" /><bpmn:sequenceFlow id="Flow_Archived" sourceRef="Task_Archive" targetRef="EndEvent_Reviewed" />',
      );
    expect(await fingerprintOf(withStep)).not.toBe(await fingerprintOf(order));
  });

  it('changes when a flow is added', async () => {
    const extra = '<bpmn:sequenceFlow id="Flow_Extra" sourceRef="Task_ReviewOrder" targetRef="EndEvent_Done" />';
    const withFlow = order.replace('<bpmn:sequenceFlow id="Flow_Reviewed"', `${extra}<bpmn:sequenceFlow id="Flow_Reviewed"`);
    expect(await fingerprintOf(withFlow)).not.toBe(await fingerprintOf(order));
  });

  it('changes when flows are rewired', async () => {
    const rewired = order
      .replace('sourceRef="Gateway_Review" targetRef="EndEvent_Done"', 'sourceRef="Gateway_Review" targetRef="EndEvent_Reviewed"')
      .replace(
        'sourceRef="Task_ReviewOrder" targetRef="EndEvent_Reviewed"',
        'sourceRef="Task_ReviewOrder" targetRef="EndEvent_Done"',
      );
    expect(await fingerprintOf(rewired)).not.toBe(await fingerprintOf(order));
  });

  it('changes with the process key', async () => {
    expect(
      await fingerprintOf(order.replace(/bpmnElement="order"/, 'bpmnElement="order-2"').replace('id="order"', 'id="order-2"')),
    ).not.toBe(await fingerprintOf(order));
  });

  const plan: Plan = {
    processKey: 'p',
    steps: [
      { id: 'a', kind: 'startEvent', incoming: [], outgoing: ['f'] },
      { id: 'b', kind: 'endEvent', incoming: ['f'], outgoing: [] },
    ],
    flows: [{ id: 'f', source: 'a', target: 'b' }],
  };

  it('does not depend on the order of steps and flows', () => {
    expect(fingerprintPlan({ ...plan, steps: [...plan.steps].reverse() })).toBe(fingerprintPlan(plan));
  });

  it('changes with a step kind', () => {
    const terminate: Plan = { ...plan, steps: plan.steps.map((s) => (s.id === 'b' ? { ...s, kind: 'terminateEndEvent' } : s)) };
    expect(fingerprintPlan(terminate)).not.toBe(fingerprintPlan(plan));
  });

  it('cannot be fooled by moving characters between fields (length prefixes)', () => {
    const one: Plan = { processKey: 'ab', steps: [], flows: [] };
    const other: Plan = { processKey: 'a', steps: [{ id: 'b', kind: 'startEvent', incoming: [], outgoing: [] }], flows: [] };
    const shifted: Plan = { processKey: 'p', steps: [], flows: [{ id: 'f', source: 'ab', target: 'c' }] };
    const shiftedBack: Plan = { processKey: 'p', steps: [], flows: [{ id: 'f', source: 'a', target: 'bc' }] };
    expect(fingerprintPlan(one)).not.toBe(fingerprintPlan(other));
    expect(fingerprintPlan(shifted)).not.toBe(fingerprintPlan(shiftedBack));
  });

  it('is pinned for a known plan, so an accidental protocol change shows up here', () => {
    expect(fingerprintPlan(plan)).toMatchInlineSnapshot(`"2ce16201246c4afc15cc229d0d7aa2f825b4273f54c144b09b6b8e1432a7e0d1"`);
  });
});
