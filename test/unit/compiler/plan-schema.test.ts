import { readdirSync } from 'node:fs';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import planSchema from '../../../schemas/plan.schema.json' with { type: 'json' };
import { compileBpmn } from '../../../runtime/compiler/index.ts';
import type { Plan } from '../../../runtime/compiler/plan.ts';
import { compilePlan, fixturesDir, processXml, readFixture, straight } from './bpmn-helpers.ts';

const validate = new Ajv({ allErrors: true, strict: true }).compile(planSchema);

/** Every process of every fixture that compiles. */
async function compiledFixturePlans(): Promise<Plan[]> {
  const plans: Plan[] = [];
  for (const file of readdirSync(fixturesDir).filter((f) => f.endsWith('.bpmn'))) {
    const xml = readFixture(file);
    const processIds = [...xml.matchAll(/<bpmn:process id="([^"]+)"/g)].map((m) => m[1] ?? '');
    for (const processId of processIds) {
      const result = await compileBpmn(xml, { processId });
      if (result.ok) plans.push(result.plan);
    }
  }
  return plans;
}

describe('schemas/plan.schema.json', () => {
  it('accepts every plan the compiler produces from the fixtures', async () => {
    const plans = await compiledFixturePlans();
    expect(plans.length).toBeGreaterThanOrEqual(7);
    for (const plan of plans) {
      const valid = validate(plan);
      expect(validate.errors ?? [], `plan ${plan.processKey}`).toEqual([]);
      expect(valid).toBe(true);
    }
  });

  const mapped = processXml(
    straight(
      `<bpmn:serviceTask id="T" camunda:type="external" camunda:topic="t"><bpmn:extensionElements><camunda:inputOutput>
        <camunda:inputParameter name="a">\${total}</camunda:inputParameter><camunda:outputParameter name="b">x</camunda:outputParameter>
      </camunda:inputOutput></bpmn:extensionElements></bpmn:serviceTask>`,
      'T',
    ),
  );

  it('accepts a plan with input/output mappings, and rejects a mapping without FEEL', async () => {
    const { plan } = await compilePlan(mapped);
    expect(plan.steps.find((s) => s.id === 'T')?.io?.inputs).toHaveLength(1);
    expect(validate(plan), JSON.stringify(validate.errors)).toBe(true);
    const corrupt = {
      ...plan,
      steps: plan.steps.map((s) => (s.io ? { ...s, io: { ...s.io, outputs: [{ target: 'b', source: 'x' }] } } : s)),
    };
    expect(validate(corrupt)).toBe(false);
  });

  it('survives a JSON round trip (what the store writes) unchanged', async () => {
    const { plan } = await compilePlan(readFixture('order.bpmn'));
    expect(JSON.parse(JSON.stringify(plan))).toEqual(plan);
  });

  it.each([
    ['an unknown top-level property', (p: Plan) => ({ ...p, extra: 1 })],
    ['an unknown step kind', (p: Plan) => ({ ...p, steps: [{ ...p.steps[0], kind: 'userTask' }] })],
    ['an unknown step property', (p: Plan) => ({ ...p, steps: [{ ...p.steps[0], timeout: 5 }] })],
    [
      'negative retries',
      (p: Plan) => ({ ...p, steps: p.steps.map((s) => (s.task ? { ...s, task: { ...s.task, retries: -1 } } : s)) }),
    ],
    [
      'a fractional priority',
      (p: Plan) => ({ ...p, steps: p.steps.map((s) => (s.task ? { ...s, task: { ...s.task, priority: 0.5 } } : s)) }),
    ],
    ['a flow without target', (p: Plan) => ({ ...p, flows: p.flows.map(({ target: _target, ...f }) => f) })],
    [
      'a condition without FEEL',
      (p: Plan) => ({ ...p, flows: p.flows.map((f) => (f.condition ? { ...f, condition: { source: f.condition.source } } : f)) }),
    ],
    ['an empty process key', (p: Plan) => ({ ...p, processKey: '' })],
  ])('rejects %s', async (_what, corrupt) => {
    const { plan } = await compilePlan(readFixture('order.bpmn'));
    expect(validate(corrupt(plan))).toBe(false);
  });
});
