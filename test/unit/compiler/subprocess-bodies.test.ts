// Parallel multi-instance subprocesses compile to a multi-instance call of their body, which
// compiles as a definition of its own ("<process>:<subprocess>"), nested bodies too; the body's
// fingerprint is part of the process's; a problem inside a body names the element inside it.
import { describe, expect, it } from 'vitest';
import { compileBpmn } from '../../../runtime/compiler/index.ts';
import { errorsOf, flow, processXml, straight, task } from './bpmn-helpers.ts';

const multi = '<bpmn:multiInstanceLoopCharacteristics camunda:collection="items" camunda:elementVariable="item" />';
const body = (id: string, inner: string, innerId: string) =>
  `<bpmn:subProcess id="${id}">${multi}<bpmn:startEvent id="${id}_S" />${inner}<bpmn:endEvent id="${id}_E" />${flow(`${id}_1`, `${id}_S`, innerId)}${flow(`${id}_2`, innerId, `${id}_E`)}</bpmn:subProcess>`;

async function compiled(xml: string) {
  const result = await compileBpmn(xml);
  if (!result.ok) expect.fail(JSON.stringify(result.diagnostics));
  return result;
}

describe('parallel multi-instance subprocesses', () => {
  it('compile to a multi-instance call of their body, deployed with the process, nested bodies too', async () => {
    const result = await compiled(processXml(straight(body('Outer', body('Inner', task('W'), 'W'), 'Inner'), 'Outer')));
    expect(result.plan.steps.find((s) => s.id === 'Outer')).toMatchObject({
      kind: 'callActivity',
      call: { process: { key: 'p:Outer' }, binding: 'deployment', inAll: true, outAll: true, businessKey: true },
      multiInstance: { collection: 'items', elementVariable: 'item', sequential: false },
    });
    // Nothing of the body is a step of the process.
    expect(result.plan.steps.map((s) => s.id)).toEqual(['S', 'Outer', 'E']);
    const bodies = result.bodies ?? [];
    expect(bodies.map((b) => [b.plan.processKey, b.plan.bodyOf])).toEqual([
      ['p:Outer', { processKey: 'p', elementId: 'Outer' }],
      ['p:Outer:Inner', { processKey: 'p', elementId: 'Inner' }],
    ]);
    expect(bodies[1]?.plan.steps.map((s) => s.id)).toEqual(['Inner_S', 'W', 'Inner_E']);
    expect(result.plan.steps.find((s) => s.id === 'Outer')?.call?.body?.fingerprint).toBe(bodies[0]?.fingerprint);
    expect(bodies[0]?.plan.steps.find((s) => s.id === 'Inner')?.call?.body?.fingerprint).toBe(bodies[1]?.fingerprint);
  });

  it('change the process fingerprint when only the body changes', async () => {
    const one = await compiled(processXml(straight(body('P', task('W'), 'W'), 'P')));
    const two = `${task('W')}${task('X')}${flow('WX', 'W', 'X')}`;
    const other = await compiled(
      processXml(straight(body('P', two, 'W').replace(flow('P_2', 'W', 'P_E'), flow('P_2', 'X', 'P_E')), 'P')),
    );
    expect(other.plan.steps.map((s) => s.id)).toEqual(one.plan.steps.map((s) => s.id));
    expect(one.fingerprint).not.toBe(other.fingerprint);
  });

  it('name the element inside the body that is refused, and refuse a body without a none start event', async () => {
    const inner = '<bpmn:complexGateway id="Odd" />';
    const refused = await compileBpmn(processXml(straight(body('P', inner, 'Odd'), 'P')));
    expect(refused.ok).toBe(false);
    if (refused.ok) return;
    expect(errorsOf(refused.diagnostics).map((d) => d.elementId)).toContain('Odd');
    const startless = `<bpmn:subProcess id="P">${multi}${task('W')}</bpmn:subProcess>`;
    const noStart = await compileBpmn(processXml(straight(startless, 'P')));
    expect(noStart.ok).toBe(false);
    if (noStart.ok) return;
    expect(errorsOf(noStart.diagnostics)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ elementId: 'P', message: expect.stringContaining('has no start event') }),
      ]),
    );
  });

  it('tell a warning about the file once, though the process and each body check it', async () => {
    const xml = processXml(straight(body('P', task('W'), 'W'), 'P')).replace(
      '</bpmn:definitions>',
      '<bpmn:message id="M" name="m"><bpmn:extensionElements><zeebe:subscription correlationKey="=k" /></bpmn:extensionElements></bpmn:message></bpmn:definitions>',
    );
    const result = await compiled(
      xml.replace('<bpmn:definitions ', '<bpmn:definitions xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" '),
    );
    expect(result.warnings.filter((w) => w.elementId === 'M')).toHaveLength(1);
  });
});
