import { describe, expect, it } from 'vitest';
import type { IoSpec, Plan, PlanStep } from '../../../runtime/compiler/plan.ts';
import { completeLoopElement, resumeStep, startPlan } from '../../../runtime/engine/advance.ts';
import { mapInputs, resultVariables } from '../../../runtime/engine/io-mappings.ts';
import { emptyEffects, type InstanceState } from '../../../runtime/model/effects.ts';

const m = (target: string, feel: string) => ({ target, feel, source: `=${feel}` });

function planWith(io: IoSpec, extra: Partial<PlanStep> = {}): Plan {
  return {
    processKey: 'p',
    steps: [
      { id: 's', kind: 'startEvent', incoming: [], outgoing: ['f1'] },
      {
        id: 't',
        kind: 'serviceTask',
        incoming: ['f1'],
        outgoing: ['f2'],
        task: { topic: 't', retries: 3, priority: 0 },
        io,
        ...extra,
      },
      { id: 'e', kind: 'endEvent', incoming: ['f2'], outgoing: [] },
    ],
    flows: [
      { id: 'f1', source: 's', target: 't' },
      { id: 'f2', source: 't', target: 'e' },
    ],
  };
}

const fresh = (): InstanceState => ({ flows: {}, steps: {} });

describe('mapInputs', () => {
  it('evaluates in order, a later input seeing the earlier ones, a missing variable reading as null', () => {
    const step = planWith({ inputs: [m('a', 'x + 1'), m('b', 'a * 2'), m('c', 'missing'), m('order.total', 'b')], outputs: [] })
      .steps[1]!;
    expect(mapInputs(step, { x: 1 })).toEqual({ ok: true, locals: { a: 2, b: 4, c: null, order: { total: 4 } } });
  });

  it('names the step and the mapping when an input cannot be evaluated', () => {
    const step = planWith({ inputs: [m('ok', '2 in (1..limit)')], outputs: [] }).steps[1]!;
    const result = mapInputs(step, { limit: 'a' });
    expect(result).toMatchObject({ ok: false, details: { mapping: { direction: 'input', target: 'ok' } } });
    expect(!result.ok && result.message).toMatch(
      /^Input mapping of task t to ok \("=2 in \(1\.\.limit\)"\) failed: .*Fix the variables, then retry the incident\.$/,
    );
  });
});

describe('resultVariables', () => {
  it('without outputs, keeps the result less the names the task holds locally', () => {
    const step = planWith({ inputs: [m('amount', 'total'), m('order.id', '1')], outputs: [] }).steps[1]!;
    expect(resultVariables(step, {}, {}, { amount: 5, order: {}, status: 'ok' })).toEqual({
      ok: true,
      variables: { status: 'ok' },
    });
  });

  it('with outputs, writes only their targets, read over process, then locals, then the result; a path updates a copy', () => {
    const step = planWith({ inputs: [], outputs: [m('paid', 'status = "ok" and local'), m('order.total', 'amount')] }).steps[1]!;
    const vars = { order: { id: 7, total: 1 }, amount: 1 };
    expect(resultVariables(step, vars, { local: true, amount: 2 }, { status: 'ok', amount: 3, other: 1 })).toEqual({
      ok: true,
      variables: { paid: true, order: { id: 7, total: 3 } },
    });
    expect(vars.order.total).toBe(1);
  });

  it('refuses with a message naming the step and mapping when an output cannot be evaluated', () => {
    const step = planWith({ inputs: [], outputs: [m('x', '2 in (1..limit)')] }).steps[1]!;
    const result = resultVariables(step, {}, {}, { limit: 'a' });
    expect(!result.ok && result.message).toMatch(/^Output mapping of task t to x .* The task stays locked/);
  });
});

describe('advance with mappings', () => {
  it('given inputs, when the task activates, then they are its local variables', () => {
    const fx = emptyEffects();
    startPlan(planWith({ inputs: [m('amount', 'total * 2')], outputs: [] }), fresh(), { total: 5 }, fx);
    expect(fx.tasks).toEqual([expect.objectContaining({ stepId: 't', localVariables: { amount: 10 } })]);
  });

  it('given no mappings, then the task has no local variables', () => {
    const plan = planWith({ inputs: [], outputs: [] });
    delete plan.steps[1]!.io;
    const fx = emptyEffects();
    startPlan(plan, fresh(), {}, fx);
    expect(fx.tasks[0]).not.toHaveProperty('localVariables');
  });

  it('given an input that fails, then an io_mapping incident and no task; the retry with the variable set creates it', () => {
    const plan = planWith({ inputs: [m('ok', '2 in (1..limit)')], outputs: [] });
    const state = fresh();
    const fx = emptyEffects();
    startPlan(plan, state, { limit: 'a' }, fx);
    expect(fx.tasks).toEqual([]);
    expect(state.steps.t).toBe('incident');
    expect(fx.incidents).toEqual([expect.objectContaining({ stepId: 't', kind: 'io_mapping' })]);
    const retry = emptyEffects();
    resumeStep(plan, 't', state, { limit: 3 }, retry);
    expect(retry.tasks).toEqual([expect.objectContaining({ stepId: 't', localVariables: { ok: true } })]);
    expect(state.steps.t).toBe('active');
  });

  it('given a parallel multi-instance task, then each element evaluates its inputs over its element and loopCounter', () => {
    const plan = planWith(
      { inputs: [m('who', 'item.name'), m('n', 'loopCounter + 1')], outputs: [] },
      { multiInstance: { collection: 'items', elementVariable: 'item', sequential: false } },
    );
    const fx = emptyEffects();
    startPlan(plan, fresh(), { items: [{ name: 'ann' }, { name: 'bob' }] }, fx);
    expect(fx.tasks.map((t) => t.localVariables)).toEqual([
      { item: { name: 'ann' }, loopCounter: 0, who: 'ann', n: 1 },
      { item: { name: 'bob' }, loopCounter: 1, who: 'bob', n: 2 },
    ]);
  });

  it('given a sequential multi-instance task whose next element fails its input, then an incident; the retry creates that element', () => {
    const plan = planWith(
      { inputs: [m('ok', '2 in (1..limit)')], outputs: [] },
      { multiInstance: { collection: 'items', elementVariable: 'item', sequential: true } },
    );
    const state = fresh();
    const fx = emptyEffects();
    startPlan(plan, state, { items: [1, 2], limit: 3 }, fx);
    expect(fx.tasks).toHaveLength(1);
    const done = emptyEffects();
    completeLoopElement(plan, 't', 0, {}, state, { items: [1, 2], limit: 'a' }, done); // limit changed meanwhile
    expect(done.tasks).toEqual([]);
    expect(done.incidents).toEqual([expect.objectContaining({ stepId: 't', kind: 'io_mapping' })]);
    const retry = emptyEffects();
    resumeStep(plan, 't', state, { items: [1, 2], limit: 4 }, retry);
    expect(retry.tasks).toEqual([
      expect.objectContaining({ loopIndex: 1, localVariables: { item: 2, loopCounter: 1, ok: true } }),
    ]);
  });
});
