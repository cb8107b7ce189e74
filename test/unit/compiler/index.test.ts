import { describe, expect, it } from 'vitest';
import { compileBpmn } from '../../../runtime/compiler/index.ts';
import type { Plan } from '../../../runtime/compiler/plan.ts';
import { compilePlan, readFixture } from './bpmn-helpers.ts';

const ORDER_PLAN: Plan = {
  processKey: 'order',
  name: 'Order',
  steps: [
    { id: 'StartEvent_Order', kind: 'startEvent', name: 'Order received', incoming: [], outgoing: ['Flow_Start'] },
    { id: 'Gateway_Fork', kind: 'parallelGateway', incoming: ['Flow_Start'], outgoing: ['Flow_ToReserve', 'Flow_ToCharge'] },
    {
      id: 'Task_ReserveStock',
      kind: 'serviceTask',
      name: 'Reserve stock',
      incoming: ['Flow_ToReserve'],
      outgoing: ['Flow_Reserved'],
      task: { topic: 'reserve-stock', retries: 3, priority: 0 },
    },
    {
      id: 'Task_ChargeCard',
      kind: 'serviceTask',
      name: 'Charge card',
      incoming: ['Flow_ToCharge'],
      outgoing: ['Flow_Charged'],
      task: { topic: 'charge-card', retries: 5, priority: 10 },
    },
    { id: 'Gateway_Join', kind: 'parallelGateway', incoming: ['Flow_Reserved', 'Flow_Charged'], outgoing: ['Flow_Joined'] },
    {
      id: 'Gateway_Review',
      kind: 'exclusiveGateway',
      name: 'Total above 100?',
      incoming: ['Flow_Joined'],
      outgoing: ['Flow_Review', 'Flow_NoReview'],
      defaultFlow: 'Flow_NoReview',
    },
    {
      id: 'Task_ReviewOrder',
      kind: 'serviceTask',
      name: 'Review order',
      incoming: ['Flow_Review'],
      outgoing: ['Flow_Reviewed'],
      task: { topic: 'review-order', retries: 3, priority: 0 },
    },
    { id: 'EndEvent_Reviewed', kind: 'endEvent', name: 'Order reviewed', incoming: ['Flow_Reviewed'], outgoing: [] },
    { id: 'EndEvent_Done', kind: 'endEvent', name: 'Order done', incoming: ['Flow_NoReview'], outgoing: [] },
  ],
  flows: [
    { id: 'Flow_Start', source: 'StartEvent_Order', target: 'Gateway_Fork' },
    { id: 'Flow_ToReserve', source: 'Gateway_Fork', target: 'Task_ReserveStock' },
    { id: 'Flow_ToCharge', source: 'Gateway_Fork', target: 'Task_ChargeCard' },
    { id: 'Flow_Reserved', source: 'Task_ReserveStock', target: 'Gateway_Join' },
    { id: 'Flow_Charged', source: 'Task_ChargeCard', target: 'Gateway_Join' },
    { id: 'Flow_Joined', source: 'Gateway_Join', target: 'Gateway_Review' },
    {
      id: 'Flow_Review',
      name: 'yes',
      source: 'Gateway_Review',
      target: 'Task_ReviewOrder',
      condition: {
        feel: '(if total = null then false else (if total instance of string then number(total) else total) > 100)',
        source: '${total > 100}',
      },
    },
    { id: 'Flow_NoReview', name: 'no', source: 'Gateway_Review', target: 'EndEvent_Done' },
    { id: 'Flow_Reviewed', source: 'Task_ReviewOrder', target: 'EndEvent_Reviewed' },
  ],
};

describe('compileBpmn', () => {
  it('compiles the order process to the expected plan, without warnings', async () => {
    const { plan, warnings } = await compilePlan(readFixture('order.bpmn'));
    expect(plan).toEqual(ORDER_PLAN);
    expect(warnings).toEqual([]);
  });

  it('compiles the Camunda 8 order process to the same step protocol shape', async () => {
    const { plan } = await compilePlan(readFixture('zeebe-order.bpmn'));
    expect(plan.steps.map((s) => s.kind)).toEqual(ORDER_PLAN.steps.map((s) => s.kind));
  });

  it('compiles a terminate end event next to an implicit end', async () => {
    const { plan } = await compilePlan(readFixture('terminate.bpmn'));
    expect(plan.steps.map((s) => [s.id, s.kind, s.outgoing.length])).toEqual([
      ['Start', 'startEvent', 1],
      ['Fork', 'parallelGateway', 2],
      ['Fast', 'serviceTask', 1],
      ['Slow', 'serviceTask', 0],
      ['StopAll', 'terminateEndEvent', 0],
    ]);
  });

  it('gives the same result for the same input', async () => {
    const xml = readFixture('order.bpmn');
    expect(await compileBpmn(xml)).toEqual(await compileBpmn(xml));
  });

  it('reports every problem of a file at once, errors carrying element ids', async () => {
    const xml = readFixture('order.bpmn')
      .replace('camunda:topic="reserve-stock"', '')
      .replace('${total &gt; 100}', '${total +}')
      .replace('<bpmn:serviceTask id="Task_ReviewOrder"', '<bpmn:transaction id="Task_ReviewOrder"')
      .replace(
        '</bpmn:serviceTask>\n    <bpmn:endEvent id="EndEvent_Reviewed"',
        '</bpmn:transaction>\n    <bpmn:endEvent id="EndEvent_Reviewed"',
      );
    const result = await compileBpmn(xml);
    if (result.ok) expect.fail('must not compile');
    expect(result.diagnostics.map((d) => d.elementId).sort()).toEqual(['Flow_Review', 'Task_ReserveStock', 'Task_ReviewOrder']);
  });
});
