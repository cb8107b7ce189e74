import { describe, expect, it } from 'vitest';
import type { Plan, PlanFlow, PlanStep } from '../../../runtime/compiler/plan.ts';
import { completeStep, deriveStatus, resumeStep, startPlan } from '../../../runtime/engine/advance.ts';
import { emptyEffects, type InstanceState } from '../../../runtime/model/effects.ts';

// Builds a plan from "a->b" edges; kinds by id prefix convention given explicitly.
function plan(
  kinds: Record<string, PlanStep['kind']>,
  edges: [string, string, string?][],
  defaults: Record<string, string> = {},
): Plan {
  const flows: PlanFlow[] = edges.map(([source, target, feel], i) => ({
    id: `f${i + 1}`,
    source,
    target,
    ...(feel ? { condition: { feel, source: feel } } : {}),
  }));
  const steps: PlanStep[] = Object.entries(kinds).map(([id, kind]) => ({
    id,
    kind,
    incoming: flows.filter((f) => f.target === id).map((f) => f.id),
    outgoing: flows.filter((f) => f.source === id).map((f) => f.id),
    ...(kind === 'serviceTask' ? { task: { topic: id, retries: 3, priority: 0 } } : {}),
    ...(defaults[id] ? { defaultFlow: defaults[id] } : {}),
  }));
  return { processKey: 'p', steps, flows };
}

const fresh = (): InstanceState => ({ flows: {}, steps: {} });

describe('advance', () => {
  const parallel = plan(
    {
      start: 'startEvent',
      fork: 'parallelGateway',
      a: 'serviceTask',
      b: 'serviceTask',
      join: 'parallelGateway',
      end: 'endEvent',
    },
    [
      ['start', 'fork'],
      ['fork', 'a'],
      ['fork', 'b'],
      ['a', 'join'],
      ['b', 'join'],
      ['join', 'end'],
    ],
  );

  it('given a parallel fork, when started, then both tasks are created and the join waits', () => {
    const state = fresh();
    const fx = emptyEffects();
    startPlan(parallel, state, {}, fx);
    expect(fx.tasks.map((t) => t.stepId)).toEqual(['a', 'b']);
    expect(state.steps.join).toBeUndefined();
    expect(deriveStatus(state, fx)).toBe('running');
  });

  it('given both branches complete one after the other, then the join fires once and the instance completes', () => {
    const state = fresh();
    startPlan(parallel, state, {}, emptyEffects());
    const first = emptyEffects();
    completeStep(parallel, 'a', state, {}, first);
    expect(first.steps.find((s) => s.stepId === 'join')).toBeUndefined();
    const second = emptyEffects();
    completeStep(parallel, 'b', state, {}, second);
    expect(second.steps.filter((s) => s.stepId === 'join')).toEqual([{ stepId: 'join', status: 'completed' }]);
    expect(deriveStatus(state, second)).toBe('completed');
  });

  const exclusive = plan(
    {
      start: 'startEvent',
      gw: 'exclusiveGateway',
      big: 'serviceTask',
      small: 'serviceTask',
      merge: 'exclusiveGateway',
      end: 'endEvent',
    },
    [
      ['start', 'gw'],
      ['gw', 'big', 'total > 100'],
      ['gw', 'small'],
      ['big', 'merge'],
      ['small', 'merge'],
      ['merge', 'end'],
    ],
    { gw: 'f3' },
  );

  it('given an exclusive gateway, when the condition holds, then only that branch runs and the other is skipped', () => {
    const state = fresh();
    const fx = emptyEffects();
    startPlan(exclusive, state, { total: 150 }, fx);
    expect(fx.tasks.map((t) => t.stepId)).toEqual(['big']);
    expect(state.steps.small).toBe('skipped');
    expect(state.flows.f5).toBe('skipped');
    const done = emptyEffects();
    completeStep(exclusive, 'big', state, {}, done);
    expect(state.steps.merge).toBe('completed');
    expect(deriveStatus(state, done)).toBe('completed');
  });

  it('given an exclusive gateway, when no condition holds, then the default flow is taken', () => {
    const state = fresh();
    const fx = emptyEffects();
    startPlan(exclusive, state, { total: 5 }, fx);
    expect(fx.tasks.map((t) => t.stepId)).toEqual(['small']);
  });

  it('given an exclusive gateway, when its condition reads a missing variable, then the default flow is taken and its event says which variable was missing', () => {
    const state = fresh();
    const fx = emptyEffects();
    startPlan(exclusive, state, {}, fx);
    expect(fx.tasks.map((t) => t.stepId)).toEqual(['small']);
    expect(fx.events.find((e) => e.stepId === 'gw')).toEqual({
      kind: 'step:completed',
      stepId: 'gw',
      data: {
        taken: ['f3'],
        byDefault: true,
        flows: [{ id: 'f2', condition: 'total > 100', result: false }],
        missingVariables: ['total'],
      },
    });
  });

  it('given an exclusive gateway, when its variables are set, then its event lists the tested conditions and no missing variable', () => {
    const state = fresh();
    const fx = emptyEffects();
    startPlan(exclusive, state, { total: 150 }, fx);
    expect(fx.events.find((e) => e.stepId === 'gw')?.data).toEqual({
      taken: ['f2'],
      byDefault: false,
      flows: [{ id: 'f2', condition: 'total > 100', result: true }],
      missingVariables: [],
    });
    const done = emptyEffects();
    completeStep(exclusive, 'big', state, {}, done);
    // a merging gateway tests no condition
    expect(done.events.find((e) => e.stepId === 'merge')?.data).toEqual({
      taken: ['f6'],
      byDefault: false,
      flows: [],
      missingVariables: [],
    });
  });

  it('given no default and a condition over a missing variable, then the incident, its details and its event name the variable', () => {
    const noDefault = plan({ start: 'startEvent', gw: 'exclusiveGateway', big: 'serviceTask', end: 'endEvent' }, [
      ['start', 'gw'],
      ['gw', 'big', 'total > 100'],
      ['big', 'end'],
    ]);
    const fx = emptyEffects();
    startPlan(noDefault, fresh(), {}, fx);
    const flows = [{ id: 'f2', condition: 'total > 100', result: false }];
    expect(fx.incidents).toEqual([
      {
        stepId: 'gw',
        kind: 'no_matching_flow',
        message: expect.stringContaining('the conditions read variable "total", which the instance does not have'),
        details: { outgoing: ['f2'], flows, missingVariables: ['total'] },
      },
    ]);
    expect(fx.events.find((e) => e.kind === 'incident:created')?.data).toEqual({
      kind: 'no_matching_flow',
      message: fx.incidents[0]?.message,
      flows,
      missingVariables: ['total'],
    });
  });

  it('given no default and no true condition, then the gateway raises an incident and a retry with new variables resumes it', () => {
    const noDefault = plan({ start: 'startEvent', gw: 'exclusiveGateway', big: 'serviceTask', end: 'endEvent' }, [
      ['start', 'gw'],
      ['gw', 'big', 'total > 100'],
      ['big', 'end'],
    ]);
    const state = fresh();
    const fx = emptyEffects();
    startPlan(noDefault, state, { total: 1 }, fx);
    expect(fx.incidents).toEqual([expect.objectContaining({ stepId: 'gw', kind: 'no_matching_flow' })]);
    expect(deriveStatus(state, fx)).toBe('incident');
    const retry = emptyEffects();
    resumeStep(noDefault, 'gw', state, { total: 500 }, retry);
    expect(retry.tasks.map((t) => t.stepId)).toEqual(['big']);
    expect(deriveStatus(state, retry)).toBe('running');
  });

  it('given an inclusive gateway, then every true branch runs and the inclusive join waits for exactly those', () => {
    const inclusive = plan(
      {
        start: 'startEvent',
        split: 'inclusiveGateway',
        a: 'serviceTask',
        b: 'serviceTask',
        c: 'serviceTask',
        join: 'inclusiveGateway',
        end: 'endEvent',
      },
      [
        ['start', 'split'],
        ['split', 'a', 'x > 0'],
        ['split', 'b', 'y > 0'],
        ['split', 'c', 'z > 0'],
        ['a', 'join'],
        ['b', 'join'],
        ['c', 'join'],
        ['join', 'end'],
      ],
    );
    const state = fresh();
    const fx = emptyEffects();
    startPlan(inclusive, state, { x: 1, y: 0, z: 1 }, fx);
    expect(fx.tasks.map((t) => t.stepId)).toEqual(['a', 'c']);
    completeStep(inclusive, 'a', state, {}, emptyEffects());
    expect(state.steps.join).toBeUndefined();
    const last = emptyEffects();
    completeStep(inclusive, 'c', state, {}, last);
    expect(state.steps.join).toBe('completed');
    expect(deriveStatus(state, last)).toBe('completed');
  });

  it('given an inclusive gateway, when one condition reads a missing variable, then the others still decide and its event names the variable', () => {
    const split = plan({ start: 'startEvent', split: 'inclusiveGateway', a: 'serviceTask', b: 'serviceTask' }, [
      ['start', 'split'],
      ['split', 'a', 'x > 0'],
      ['split', 'b', 'y > 0'],
    ]);
    const fx = emptyEffects();
    startPlan(split, fresh(), { x: 1 }, fx);
    expect(fx.tasks.map((t) => t.stepId)).toEqual(['a']);
    expect(fx.events.find((e) => e.stepId === 'split')?.data).toEqual({
      taken: ['f2'],
      byDefault: false,
      flows: [
        { id: 'f2', condition: 'x > 0', result: true },
        { id: 'f3', condition: 'y > 0', result: false },
      ],
      missingVariables: ['y'],
    });
  });

  it('given a parallel join fed by an exclusive split, when one input is skipped, then the join raises an incident naming it', () => {
    const unsound = plan(
      {
        start: 'startEvent',
        gw: 'exclusiveGateway',
        a: 'serviceTask',
        b: 'serviceTask',
        join: 'parallelGateway',
        end: 'endEvent',
      },
      [
        ['start', 'gw'],
        ['gw', 'a', 'go = true'],
        ['gw', 'b'],
        ['a', 'join'],
        ['b', 'join'],
        ['join', 'end'],
      ],
      { gw: 'f3' },
    );
    const state = fresh();
    startPlan(unsound, state, { go: true }, emptyEffects());
    const fx = emptyEffects();
    completeStep(unsound, 'a', state, {}, fx);
    expect(fx.incidents).toEqual([expect.objectContaining({ stepId: 'join', kind: 'join_skipped' })]);
    expect(fx.incidents[0]?.message).toContain('join');
  });

  it('given a terminate end event on one branch, then the instance completes and other work is not created', () => {
    const terminate = plan({ start: 'startEvent', fork: 'parallelGateway', stop: 'terminateEndEvent', a: 'serviceTask' }, [
      ['start', 'fork'],
      ['fork', 'stop'],
      ['fork', 'a'],
    ]);
    const state = fresh();
    const fx = emptyEffects();
    startPlan(terminate, state, {}, fx);
    expect(fx.terminated).toBe(true);
    expect(deriveStatus(state, fx)).toBe('completed');
  });

  it('given a condition that cannot be evaluated as boolean, then it counts as false', () => {
    const state = fresh();
    const fx = emptyEffects();
    startPlan(exclusive, state, {}, fx); // total missing: null > 100 is not true
    expect(fx.tasks.map((t) => t.stepId)).toEqual(['small']);
  });
});
