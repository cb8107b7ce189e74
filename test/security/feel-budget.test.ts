// FEEL budget: length and depth refused at deploy naming the flow; an expression that
// loops past the time budget is stopped (its thread terminated) and the instance gets
// an incident naming the gateway and the budget, while the server keeps answering.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBpmn } from '../support/bpmn.ts';
import { deploy, start, waitForStatus } from '../support/flows.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { evaluateCondition, evaluateKey, toFeel } from '../../runtime/shared/feel.ts';
import { configureFeelBudget, feelBudget, needsThread } from '../../runtime/shared/feel-budget.ts';

function gatewayBpmn(processId: string, condition: string): string {
  return buildBpmn(
    processId,
    [
      { id: 'start', type: 'startEvent' },
      { id: 'choose', type: 'exclusiveGateway', default: 'toOther' },
      { id: 'big', type: 'endEvent' },
      { id: 'other', type: 'endEvent' },
    ],
    [
      { from: 'start', to: 'choose' },
      { id: 'toBig', from: 'choose', to: 'big', condition },
      { id: 'toOther', from: 'choose', to: 'other' },
    ],
  );
}

describe('FEEL budget: unit', () => {
  it('refuses an expression longer than the limit, FEEL and JUEL, before parsing it', () => {
    const { maxLength } = feelBudget();
    const feel = toFeel(`= ${'a + '.repeat(maxLength / 4)}1`);
    expect(feel).toMatchObject({
      ok: false,
      message: expect.stringMatching(/longer than the limit of 4000 \(BATON_FEEL_MAX_LENGTH\)/),
    });
    const juel = toFeel(`\${${'a && '.repeat(maxLength / 5)}b}`);
    expect(juel).toMatchObject({ ok: false, message: expect.stringMatching(/BATON_FEEL_MAX_LENGTH/) });
  });

  it('refuses nesting deeper than the limit (the JUEL parser would recurse per parenthesis)', () => {
    const deep = `${'('.repeat(70)}a > 1${')'.repeat(70)}`;
    expect(toFeel(`= ${deep}`)).toMatchObject({
      ok: false,
      message: expect.stringMatching(/nests \d+ levels deep, more than the limit of 64 \(BATON_FEEL_MAX_DEPTH\)/),
    });
    expect(toFeel(`\${${deep}}`)).toMatchObject({
      ok: false,
      message: expect.stringMatching(/more than 64 deep \(BATON_FEEL_MAX_DEPTH\)/),
    });
    expect(toFeel(`= ${'('.repeat(10)}a > 1${')'.repeat(10)}`)).toEqual({
      ok: true,
      feel: `${'('.repeat(10)}a > 1${')'.repeat(10)}`,
    });
  });

  it('runs straight-line expressions inline and loops, quantifiers and functions in the budgeted thread', () => {
    expect(needsThread('a > 1 and b.c = "x" or count(items) > 2')).toBe(false);
    expect(needsThread('some x in items satisfies x > 2')).toBe(true);
    expect(needsThread('count(for i in 1..n return i) > 0')).toBe(true);
    expect(needsThread('{f: function(n) n}.f(1) = 1')).toBe(true);
    expect(evaluateCondition('some x in items satisfies x > 2', { items: [1, 5] })).toEqual({
      ok: true,
      value: true,
      missingVariables: [],
    });
    expect(evaluateCondition('every x in items satisfies x > 2', { items: [1, 5] })).toEqual({
      ok: true,
      value: false,
      missingVariables: [],
    });
  });

  it('stops an evaluation past the time budget, names the budget, and the next evaluation works', () => {
    const startedAt = performance.now();
    const stopped = evaluateCondition('count(for i in 1..n return i) > 0', { n: 1e9 });
    const tookMs = performance.now() - startedAt;
    expect(stopped).toMatchObject({
      ok: false,
      message: expect.stringMatching(/did not finish within the budget of 200 ms .*BATON_FEEL_TIME_BUDGET_MS/),
    });
    expect(tookMs).toBeLessThan(feelBudget().timeMs + 2000); // the budget plus starting a fresh thread
    // Unbounded recursion through a FEEL function is stopped the same way.
    expect(evaluateKey('{f: function(n) if n = 0 then 0 else f(n - 1), r: f(100000000)}.r', {})).toMatchObject({
      ok: false,
      message: expect.stringMatching(/budget/),
    });
    expect(evaluateCondition('some x in items satisfies x = 3', { items: [1, 2, 3] })).toEqual({
      ok: true,
      value: true,
      missingVariables: [],
    });
  });

  it('refuses a correlation key longer than the result limit', () => {
    expect(evaluateKey('k', { k: 'x'.repeat(1001) })).toMatchObject({
      ok: false,
      message: expect.stringMatching(/key of 1001 characters, longer than the limit of 1000 \(BATON_FEEL_MAX_RESULT_LENGTH\)/),
    });
    expect(evaluateKey('k', { k: 'x'.repeat(1000) })).toEqual({ ok: true, value: 'x'.repeat(1000) });
  });

  it('takes a smaller budget when configured', () => {
    const before = feelBudget();
    try {
      configureFeelBudget({ maxLength: 20 });
      expect(toFeel('= aaaaaaaaaa > bbbbbbbbbb')).toMatchObject({ ok: false, message: expect.stringMatching(/limit of 20/) });
    } finally {
      configureFeelBudget(before);
    }
  });
});

describe('FEEL budget: server', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer();
  });
  afterAll(async () => t?.close());

  it('refuses at deploy a condition past the length limit, naming the flow', async () => {
    const res = await t.api.post('/api/definitions', { xml: gatewayBpmn('too-long', `= ${'x + '.repeat(1100)}1 > 0`) });
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body)).toMatch(/toBig.*BATON_FEEL_MAX_LENGTH/);
  });

  it('an instance whose condition loops past the budget gets an incident naming flow, gateway and budget; the server keeps answering', async () => {
    await deploy(t.api, gatewayBpmn('loops', '= count(for i in 1..n return i) > 0'));
    const small = await start(t.api, 'loops', { variables: { n: 3 } });
    expect((await waitForStatus(t.api, small, 'completed')).status).toBe('completed');
    const id = await start(t.api, 'loops', { variables: { n: 1e9 } });
    const stuck = await waitForStatus(t.api, id, 'incident');
    expect(stuck.incidents[0].message).toMatch(/Condition of flow toBig at choose failed: .*budget of 200 ms/);
    expect((await t.api.get('/healthz')).status).toBe(200);
  });
});
