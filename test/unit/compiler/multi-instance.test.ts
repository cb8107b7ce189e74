import { describe, expect, it } from 'vitest';
import { compileBpmn } from '../../../runtime/compiler/index.ts';
import { planSchemaErrors } from '../../../runtime/shared/plan-validator.ts';
import { buildBpmn, type MultiInstance } from '../../support/bpmn.ts';

function loop(multiInstance: MultiInstance): string {
  return buildBpmn(
    'p',
    [
      { id: 's', type: 'startEvent' },
      { id: 'each', type: 'serviceTask', topic: 'each', multiInstance },
      { id: 'e', type: 'endEvent' },
    ],
    [
      { from: 's', to: 'each' },
      { from: 'each', to: 'e' },
    ],
  );
}

describe('multi-instance service tasks in the compiler', () => {
  it('reads collection, element variable, sequential, completion condition and the output (JUEL turned into FEEL)', async () => {
    const result = await compileBpmn(
      loop({
        collection: '${order.items}',
        elementVariable: 'item',
        sequential: true,
        completionCondition: '${nrOfCompletedInstances >= 2}',
        outputCollection: 'results',
        outputElement: '= price * 2',
      }),
    );
    if (!result.ok) throw new Error(JSON.stringify(result.diagnostics));
    const step = result.plan.steps.find((s) => s.id === 'each');
    expect(step).toMatchObject({
      kind: 'serviceTask',
      task: { topic: 'each' },
      multiInstance: {
        collection: 'order.items',
        elementVariable: 'item',
        sequential: true,
        completionCondition: {
          feel: '(if nrOfCompletedInstances = null then false else (if nrOfCompletedInstances instance of string then number(nrOfCompletedInstances) else nrOfCompletedInstances) >= 2)',
          source: '${nrOfCompletedInstances >= 2}',
        },
        outputCollection: 'results',
        outputElement: 'price * 2',
      },
    });
    expect(planSchemaErrors(result.plan)).toEqual([]);
  });

  it('a bare collection name is the variable; parallel is the default', async () => {
    const result = await compileBpmn(loop({ collection: 'items' }));
    expect(result.ok && result.plan.steps.find((s) => s.id === 'each')?.multiInstance).toEqual({
      collection: 'items',
      sequential: false,
    });
  });

  it('loopCardinality without a collection runs that many elements; with one, the collection decides and deploy says so', async () => {
    const counted = await compileBpmn(loop({ cardinality: '${count}' }));
    expect(counted.ok && counted.plan.steps.find((s) => s.id === 'each')?.multiInstance).toEqual({
      cardinality: 'count',
      sequential: false,
    });
    if (counted.ok) expect(planSchemaErrors(counted.plan)).toEqual([]);
    const both = await compileBpmn(loop({ collection: 'items', cardinality: '3' }));
    if (!both.ok) throw new Error(JSON.stringify(both.diagnostics));
    expect(both.plan.steps.find((s) => s.id === 'each')?.multiInstance).toEqual({ collection: 'items', sequential: false });
    expect(both.warnings).toEqual([
      expect.objectContaining({
        elementId: 'each',
        severity: 'warning',
        message: expect.stringContaining('loopCardinality "3" is not used'),
      }),
    ]);
  });

  it('refuses a loopCardinality written in a script language instead of reading it as FEEL', async () => {
    const xml = loop({ cardinality: 'items.length' }).replace(
      /<bpmn:loopCardinality([^>]*)>/,
      '<bpmn:loopCardinality$1 language="javascript">',
    );
    expect(xml).toContain('language="javascript"');
    const result = await compileBpmn(xml);
    expect(!result.ok && result.diagnostics).toEqual([
      expect.objectContaining({
        elementId: 'each',
        message: expect.stringContaining('loopCardinality is written in javascript, which Baton does not evaluate there'),
      }),
    ]);
  });

  it.each([
    [{ collection: '' }, 'set camunda:collection'],
    [{ cardinality: '3', elementVariable: 'item' }, 'needs a collection'],
    [{ cardinality: '${n +}' }, 'loopCardinality'],
    [{ collection: '${a +}' }, 'camunda:collection'],
    [{ collection: 'items', elementVariable: 'not a name' }, 'camunda:elementVariable'],
    [{ collection: 'items', completionCondition: '${x ==}' }, 'completionCondition'],
    [{ collection: 'items', outputCollection: '1bad' }, 'baton:outputCollection'],
    [{ collection: '= for x in items return x' }, 'iterates'],
  ])('refuses %j naming the task', async (spec, text) => {
    const result = await compileBpmn(loop(spec as MultiInstance));
    expect(result.ok).toBe(false);
    expect(!result.ok && result.diagnostics).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ elementId: 'each', severity: 'error', message: expect.stringContaining(text) }),
      ]),
    );
  });
});
