// The JavaScript sandbox of script tasks, without a database: what a script sees and gives back,
// and that every way a script can go wrong ends in an answer, not a stuck or crashed process.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { configureScriptBudget, DEFAULT_SCRIPT_BUDGET, runJavaScript } from '../../../runtime/engine/script-sandbox.ts';
import { runScript } from '../../../runtime/engine/scripts.ts';

// On a busy machine a 100 ms wall-clock budget can run out before a trivial script is scheduled:
// the tests of other things get time to spare, and each budget test sets the budget it tests.
beforeEach(() => configureScriptBudget({ timeMs: 2_000 }));
afterEach(() => configureScriptBudget(DEFAULT_SCRIPT_BUDGET));

describe('runJavaScript', () => {
  it('gives the value of the last expression and what execution.setVariable set, reading variables by name and through execution', () => {
    const result = runJavaScript(
      `const total = items.reduce((sum, i) => sum + i.price * i.qty, 0);
       execution.setVariable('count', execution.getVariable('items').length);
       ({ total, customer: customer.toUpperCase() })`,
      {
        items: [
          { price: 2, qty: 3 },
          { price: 5, qty: 1 },
        ],
        customer: 'ann',
      },
    );
    expect(result).toEqual({ ok: true, value: { total: 11, customer: 'ANN' }, writes: { count: 2 } });
  });

  it('gives null for a script whose last statement has no value, and leaves built-ins alone when a variable shares their name', () => {
    expect(runJavaScript('let x = 1;', {})).toEqual({ ok: true, value: null, writes: {} });
    expect(runJavaScript('JSON.stringify({ a: 1 })', { JSON: 'mine' })).toEqual({ ok: true, value: '{"a":1}', writes: {} });
    expect(runJavaScript('execution.getVariable("JSON")', { JSON: 'mine' })).toMatchObject({ value: 'mine' });
  });

  it("reads and builds JSON with Camunda Spin's S(), as Camunda 7 scripts do, and stores a Spin node set as a variable as its JSON", () => {
    const result = runJavaScript(
      `const price = S(execution.getVariableTyped('car').getValueSerialized()).prop('price').numberValue();
       execution.setVariable('price', price);
       const order = S('{"lines":[1,2]}');
       order.prop('lines').append(3);
       order.prop('rush', S({ by: 'noon' }));
       execution.setVariable('order', order);
       [order.toString(), order.hasProp('x'), order.prop('rush').prop('by').stringValue(), order.prop('lines').elements().map((e) => e.numberValue()), S(car).propertyNames(), S(null).isNull()]`,
      { car: { price: 42, model: 'T' } },
    );
    expect(result).toEqual({
      ok: true,
      value: ['{"lines":[1,2,3],"rush":{"by":"noon"}}', false, 'noon', [1, 2, 3], ['price', 'model'], true],
      writes: { price: 42, order: { lines: [1, 2, 3], rush: { by: 'noon' } } },
    });
  });

  it('answers a Spin misuse as the script error Camunda 7 would raise: a missing property, a value of another type, a string that is not JSON, XML', () => {
    const car = { car: { price: 42 } };
    expect(runJavaScript(`S(car).prop('colour')`, car)).toMatchObject({
      ok: false,
      message: 'the script threw Error: Spin: the JSON object has no property "colour"',
    });
    expect(runJavaScript(`S(car).prop('price').stringValue()`, car)).toMatchObject({
      ok: false,
      message: 'the script threw TypeError: Spin: stringValue needs a JSON string, this node is number',
    });
    expect(runJavaScript(`S('not json')`, {})).toMatchObject({ ok: false, message: expect.stringContaining('not JSON') });
    expect(runJavaScript(`S('<a/>', 'application/xml')`, {})).toMatchObject({
      ok: false,
      message: expect.stringContaining('Baton reads JSON only'),
    });
  });

  it('reaches nothing of the host: no require, process, fetch, timers or node globals', () => {
    const probe = ['require', 'process', 'fetch', 'setTimeout', 'globalThis.Buffer', 'module'].map((n) => `typeof ${n}`);
    expect(runJavaScript(`[${probe.join(', ')}]`, {})).toMatchObject({ ok: true, value: Array(6).fill('undefined') });
  });

  it('reports a thrown error with its line', () => {
    const result = runJavaScript(`const a = 1;\nif (!customer) throw new TypeError('no customer');`, { customer: null });
    expect(result).toMatchObject({
      ok: false,
      message: 'the script threw TypeError: no customer',
      details: { language: 'javascript', error: 'TypeError', line: 2 },
    });
  });

  it('reports a syntax error', () => {
    expect(runJavaScript('let = ;', {})).toMatchObject({
      ok: false,
      message: expect.stringMatching(/^the script threw SyntaxError/),
    });
  });

  it('stops a script that loops forever after the time budget, and the next run works', () => {
    configureScriptBudget({ timeMs: 50 });
    const started = Date.now();
    const result = runJavaScript('while (true) {}', {});
    const elapsed = Date.now() - started;
    expect(result).toMatchObject({ ok: false, message: expect.stringContaining('did not finish within the budget of 50 ms') });
    expect(elapsed).toBeGreaterThanOrEqual(45);
    expect(elapsed).toBeLessThan(2_000);
    // The thread was terminated; a new one runs the next script (a wider budget: a loaded
    // machine may not schedule the new thread within 50 ms, which is not what this asserts).
    configureScriptBudget({ timeMs: 1_000 });
    expect(runJavaScript('1 + 1', {})).toMatchObject({ ok: true, value: 2 });
  });

  it('stops a script that allocates without end at the memory budget', () => {
    configureScriptBudget({ memoryMb: 8, timeMs: 5_000 });
    const result = runJavaScript('const all = []; for (let i = 0; ; i++) all.push({ i, s: "item " + i });', {});
    expect(result).toMatchObject({ ok: false, message: expect.stringContaining('needed more than 8 MB') });
    expect(runJavaScript('[1, 2].length', {})).toMatchObject({ ok: true, value: 2 });
  });

  it('stops a script busy inside native calls, which QuickJS does not interrupt, by ending its thread at the budget', () => {
    configureScriptBudget({ memoryMb: 8, timeMs: 300 });
    const started = Date.now();
    const result = runJavaScript('const all = []; while (true) all.push(new Array(100000).fill(1));', {});
    expect(result).toMatchObject({ ok: false, message: expect.stringContaining('did not finish within the budget of 300 ms') });
    expect(Date.now() - started).toBeLessThan(1_500);
    expect(runJavaScript('"next"', {})).toMatchObject({ ok: true, value: 'next' });
  });

  it('stops unbounded recursion at the stack limit, and the next run works', () => {
    const result = runJavaScript('function down(n) { return down(n + 1) + 1; } down(0)', {});
    expect(result).toMatchObject({
      ok: false,
      message: expect.stringMatching(/^the script threw InternalError: stack overflow/),
    });
    expect(runJavaScript('"still here"', {})).toMatchObject({ ok: true, value: 'still here' });
  });

  it('refuses a result that is not JSON', () => {
    expect(runJavaScript('10n', {})).toMatchObject({ ok: false, message: expect.stringContaining('cannot be written as JSON') });
  });
});

describe('runScript', () => {
  it('writes the result to the result variable, after what the script set itself', () => {
    expect(
      runScript({ language: 'javascript', source: 'execution.setVariable("total", 1); 2', resultVariable: 'total' }, {}),
    ).toEqual({ ok: true, writes: { total: 2 } });
  });

  it('evaluates FEEL to its whole value, lists and contexts included, looping ones too', () => {
    const variables = { items: [{ price: 2 }, { price: 5 }] };
    expect(
      runScript({ language: 'feel', source: 'for i in items return i.price * 2', resultVariable: 'doubled' }, variables),
    ).toEqual({
      ok: true,
      writes: { doubled: [4, 10] },
    });
    expect(runScript({ language: 'feel', source: '{ n: count(items) }', resultVariable: 'summary' }, variables)).toEqual({
      ok: true,
      writes: { summary: { n: 2 } },
    });
  });

  it('holds what a script writes to the variables limit', () => {
    configureScriptBudget({ maxWriteBytes: 100 });
    expect(runScript({ language: 'javascript', source: '"x".repeat(200)', resultVariable: 'big' }, {})).toMatchObject({
      ok: false,
      message: expect.stringContaining('above the limit of 100 bytes'),
    });
  });
});
