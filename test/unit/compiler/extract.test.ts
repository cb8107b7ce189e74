import { describe, expect, it } from 'vitest';
import { compileDiagnostics, compilePlan, errorsOf, flow, processXml, readFixture, task } from './bpmn-helpers.ts';

describe('extractGraph', () => {
  it('ignores lanes, data, annotations, groups, documentation and extension elements', async () => {
    const { plan, warnings } = await compilePlan(readFixture('artifacts.bpmn'));
    expect(plan.steps.map((s) => s.id)).toEqual(['Start', 'Bill', 'End']);
    expect(plan.flows.map((f) => f.id)).toEqual(['F1', 'F2']);
    // The task's input mapping runs; the other extensions are documentation and layout.
    expect(warnings).toEqual([]);
    expect(plan.steps.find((s) => s.id === 'Bill')?.io?.inputs.map((m) => m.target)).toEqual(['amount']);
  });

  it('derives incoming and outgoing from the sequence flows, in document order', async () => {
    // No <bpmn:incoming>/<bpmn:outgoing> children: the flows alone define the wiring.
    const xml = processXml(
      [
        '<bpmn:startEvent id="S" />',
        '<bpmn:parallelGateway id="Fork" />',
        task('B'),
        task('A'),
        '<bpmn:parallelGateway id="Join" />',
        '<bpmn:endEvent id="E" />',
        flow('F1', 'S', 'Fork'),
        flow('F3', 'Fork', 'B'),
        flow('F2', 'Fork', 'A'),
        flow('F5', 'B', 'Join'),
        flow('F4', 'A', 'Join'),
        flow('F6', 'Join', 'E'),
      ].join('\n'),
    );
    const { plan } = await compilePlan(xml);
    const byId = Object.fromEntries(plan.steps.map((s) => [s.id, s]));
    expect(byId['Fork']?.outgoing).toEqual(['F3', 'F2']);
    expect(byId['Join']?.incoming).toEqual(['F5', 'F4']);
    expect(plan.steps.map((s) => s.id)).toEqual(['S', 'Fork', 'B', 'A', 'Join', 'E']);
  });

  it('keeps names when present and leaves empty ones out', async () => {
    const { plan } = await compilePlan(readFixture('order.bpmn'));
    expect(plan.name).toBe('Order');
    expect(plan.steps.find((s) => s.id === 'Task_ChargeCard')?.name).toBe('Charge card');
    expect(plan.steps.find((s) => s.id === 'Gateway_Fork')).not.toHaveProperty('name');
    expect(plan.flows.find((f) => f.id === 'Flow_Review')?.name).toBe('yes');
  });

  it('refuses a sequence flow pointing to a missing element', async () => {
    const xml = processXml(
      ['<bpmn:startEvent id="S" />', task('T'), flow('F1', 'S', 'T'), flow('F2', 'T', 'Missing')].join('\n'),
    );
    expect(errorsOf(await compileDiagnostics(xml))).toEqual([
      {
        elementId: 'F2',
        severity: 'error',
        message: 'Sequence flow F2 has targetRef Missing, which does not exist: connect both ends to elements of process p',
      },
    ]);
  });

  it('refuses a sequence flow without source or target', async () => {
    const xml = processXml(['<bpmn:startEvent id="S" />', '<bpmn:sequenceFlow id="F1" />'].join('\n'));
    expect(errorsOf(await compileDiagnostics(xml))).toContainEqual(
      expect.objectContaining({ elementId: 'F1', message: expect.stringContaining('has no sourceRef and has no targetRef') }),
    );
  });

  it('refuses a sequence flow that ends on something that is not a flow node of the process', async () => {
    const xml = processXml(
      ['<bpmn:startEvent id="S" />', '<bpmn:dataStoreReference id="Store" />', flow('F1', 'S', 'Store')].join('\n'),
    );
    expect(errorsOf(await compileDiagnostics(xml))).toContainEqual(
      expect.objectContaining({
        elementId: 'F1',
        message: expect.stringContaining('has targetRef Store, which is not a flow node of this process'),
      }),
    );
  });
});
