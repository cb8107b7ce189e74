import { readdirSync } from 'node:fs';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import planSchema from '../../../schemas/plan.schema.json' with { type: 'json' };
import { compileBpmn } from '../../../runtime/compiler/index.ts';
import type { Plan } from '../../../runtime/compiler/plan.ts';
import { compilePlan, fixturesDir, readFixture } from './bpmn-helpers.ts';

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
