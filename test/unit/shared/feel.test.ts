import { describe, expect, it } from 'vitest';
import { checkFeel, evaluateCondition, toFeel } from '../../../runtime/shared/feel.ts';

function feelOf(source: string): string {
  const result = toFeel(source);
  if (!result.ok) expect.fail(`expected ${source} to translate, got: ${result.message}`);
  return result.feel;
}

/** A JUEL arithmetic operand coerced to a number, as the translation writes it. */
const num = (x: string) => `(if ${x} = null then 0 else if ${x} instance of string then number(${x}) else ${x})`;
/** A JUEL comparison operand coerced to a number, and to a boolean. */
const numberOf = (x: string) => `(if ${x} instance of string then number(${x}) else ${x})`;
const booleanOf = (x: string) => `(if ${x} instance of string then lower case(${x}) = "true" else ${x})`;
/** `x op n` as EL compares a variable with a number: false when x is null. */
const rel = (x: string, op: string, n: string) => `(if ${x} = null then false else ${numberOf(x)} ${op} ${n})`;
/** An operand of ! && || ?: coerced to a boolean: null is false. */
const bool = (x: string) =>
  `(if ${x} = null then false else if ${x} instance of string then lower case(${x}) = "true" else ${x})`;

function refusalOf(source: string): string {
  const result = toFeel(source);
  if (result.ok) expect.fail(`expected ${source} to be refused, got FEEL: ${result.feel}`);
  return result.message;
}

describe('toFeel: FEEL conditions (Camunda 8)', () => {
  it.each([
    ['= a > 5', 'a > 5'],
    ['=a>5', 'a>5'],
    ['  =  total >= 100 and vip  \n', 'total >= 100 and vip'],
    ['= customer.address.country = "NL"', 'customer.address.country = "NL"'],
  ])('strips the leading "=" of %j', (source, feel) => {
    expect(feelOf(source)).toBe(feel);
  });

  it('refuses FEEL that does not parse, with the parse problem', () => {
    expect(refusalOf('= a >')).toMatch(/incomplete/);
    expect(refusalOf('= x > 1 x')).toMatch(/cannot be parsed near "x" \(position 6\)/);
    expect(refusalOf('=')).toMatch(/empty/);
  });
});

describe('toFeel: JUEL conditions (Camunda 7) translated to FEEL', () => {
  it.each([
    ['${total > 100}', rel('total', '>', '100')],
    ['#{total > 100}', rel('total', '>', '100')],
    ['${approved}', 'approved'],
    ['${order.total <= 5.5}', rel('order.total', '<=', '5.5')],
    ['${a.b.c == 1}', `${numberOf('a.b.c')} = 1`],
    ["${status == 'open'}", 'status = "open"'],
    ['${status != "open"}', 'not(status = "open")'],
    ['${x == null}', 'x = null'],
    ['${flag == true || other == false}', `${booleanOf('flag')} = true or ${booleanOf('other')} = false`],
    ['${a > 1 && b < 2}', `${rel('a', '>', '1')} and ${rel('b', '<', '2')}`],
    ['${a >= 1 and b <= 2 or c}', `${rel('a', '>=', '1')} and ${rel('b', '<=', '2')} or ${bool('c')}`],
    ['${(a || b) && c}', `(${bool('a')} or ${bool('b')}) and ${bool('c')}`],
    ['${a || b && c}', `${bool('a')} or ${bool('b')} and ${bool('c')}`],
    ['${!approved}', `not(${bool('approved')})`],
    ['${not (a lt 1)}', `not(${rel('a', '<', '1')})`],
    ['${!a == b}', `not(${bool('a')}) = ${booleanOf('b')}`],
    ['${a eq 1 or b ne 2}', `${numberOf('a')} = 1 or not(${numberOf('b')} = 2)`],
    [
      '${a lt 1 and b gt 2 and c le 3 and d ge 4}',
      `${rel('a', '<', '1')} and ${rel('b', '>', '2')} and ${rel('c', '<=', '3')} and ${rel('d', '>=', '4')}`,
    ],
    ['${-1 < a}', `(if a = null then false else -1 < ${numberOf('a')})`],
    ['${a > -b}', `(if a = null then false else ${numberOf('a')} > -${num('b')})`],
    ["${s == 'it\\'s'}", 's = "it\'s"'],
    ['${s == "say \\"hi\\""}', 's = "say \\"hi\\""'],
    ["${s == 'a\\\\b'}", 's = "a\\\\b"'],
    ["${s == 'tab\there'}", 's = "tab\\there"'],
    ['${ total > 100 }', rel('total', '>', '100')],
    ['${a + 1 > 2}', `${num('a')} + 1 > 2`],
    ['${a - b - c > 0}', `${num('a')} - ${num('b')} - ${num('c')} > 0`],
    ['${a - (b - c)}', `${num('a')} - (${num('b')} - ${num('c')})`],
    ['${(a + b) * c / 2}', `(${num('a')} + ${num('b')}) * ${num('c')} / 2`],
    ['${a div 2 > 1}', `${num('a')} / 2 > 1`],
    ['${a % 2 == 0 or a mod 3 == 0}', `modulo(${num('a')}, 2) = 0 or modulo(${num('a')}, 3) = 0`],
    ['${1 + "2" + null}', '1 + number("2") + 0'],
    ["${gender == 'male' ? 'Mr.' : 'Mrs.'}", 'if gender = "male" then "Mr." else "Mrs."'],
    ['${a ? b ? 1 : 2 : 3}', `if ${bool('a')} then (if ${bool('b')} then 1 else 2) else 3`],
    ['${result[0].statusCode == 200}', `${numberOf('result[1].statusCode')} = 200`],
    ['${m["k"] > 1}', rel('m.k', '>', '1')],
    ["${x == '5'}", `(if x instance of number then ${numberOf('x')} = number("5") else x = "5")`],
    ["${x == 'TRUE'}", `(if x instance of boolean then ${booleanOf('x')} = true else x = "TRUE")`],
    ['${execution.getVariable("approved")}', 'approved'],
  ])('%s -> %s', (source, feel) => {
    expect(feelOf(source)).toBe(feel);
  });

  it('keeps operators inside strings as text, never as code', () => {
    expect(feelOf("${'a && b || !c' == s}")).toBe('"a && b || !c" = s');
    expect(evaluateCondition(feelOf("${'a && b || !c' == s}"), { s: 'a && b || !c' })).toMatchObject({ ok: true, value: true });
    expect(feelOf('${s == "${x}"}')).toBe('s = "${x}"');
  });

  it.each([
    ['${a instanceof b}', 'operator "instanceof"'],
    ['${a ? b}', 'a ":" is missing'],
    ['${order.isBig()}', 'method and function calls'],
    ['${execution.getVariables() != null}', 'method and function calls'],
    ['${execution.getVariable(name) > 1}', 'takes a variable name in quotes'],
    ['${list[i] == 1}', 'index access takes a whole number or a property name'],
    ['${map["a b"] == 1}', 'index access takes a whole number or a property name'],
    ['${a} and ${b}', 'only one ${...} expression'],
    ['${a = 1}', 'assignment'],
    ['${$x > 1}', 'contains "$"'],
    ['${then > 1}', 'FEEL keyword'],
    ['${order.for == 1}', 'FEEL keyword'],
    ["${s == 'open}", 'is not closed'],
    ['${(a > 1}', '")" is missing'],
    ['${a >}', 'ends too early'],
    ['${}', 'ends too early'],
    ['${5L > a}', 'number format'],
    ['${1e3 > a}', 'number format'],
    ['${a @ b}', 'character "@"'],
    ['${a b}', '"b" is not expected'],
    ['${a.}', 'property name is expected'],
  ])('refuses %s, naming %s', (source, what) => {
    expect(refusalOf(source)).toContain(what);
  });

  it('refuses text that is neither FEEL nor JUEL, saying how to write it', () => {
    expect(refusalOf('a > 5')).toMatch(/neither FEEL nor JUEL: write FEEL such as "= total > 100"/);
    expect(refusalOf("bpmn:getDataObject('approved')")).toMatch(/neither FEEL nor JUEL/);
    expect(refusalOf('   ')).toMatch(/empty/);
  });

  it('never executes the source: a would-be escape is refused and changes nothing', () => {
    const globals = globalThis as Record<string, unknown>;
    expect(refusalOf("${''.constructor.constructor('globalThis.pwned = 1')()}")).toMatch(/"\." is not expected/);
    expect(refusalOf("${x.constructor.constructor('globalThis.pwned = 1')()}")).toMatch(/method and function calls/);
    expect(refusalOf('${globalThis.pwned = 1}')).toMatch(/assignment/);
    expect(globals['pwned']).toBeUndefined();
  });
});

describe('translated JUEL evaluates as Camunda 7 would', () => {
  it.each([
    ['${total > 100}', { total: 150 }, true],
    ['${total > 100}', { total: 50 }, false],
    ['${total > 100}', {}, false],
    ['${x != null}', { x: 0 }, true],
    ['${x != null}', {}, false],
    ["${a.b == 'x'}", { a: { b: 'x' } }, true],
    ['${!approved}', { approved: false }, true],
    ['${empty x}', {}, true],
    ['${empty x}', { x: null }, true],
    ['${empty x}', { x: '' }, true],
    ['${empty x}', { x: [] }, true],
    ['${empty x}', { x: {} }, true],
    ['${empty x}', { x: 'a' }, false],
    ['${empty x}', { x: [1] }, false],
    ['${empty x}', { x: { k: 1 } }, false],
    ['${empty x}', { x: 5 }, false],
    ['${!empty x}', { x: 5 }, true],
    ['${not empty customer.phone and customer.smsOptIn}', { customer: { phone: '+31', smsOptIn: true } }, true],
    ['${not empty customer.phone and customer.smsOptIn}', { customer: { phone: '', smsOptIn: true } }, false],
    ['${S(order).prop("total").numberValue() > 100}', { order: { total: 150 } }, true],
    ['${S(order).prop("customer").prop("vip").boolValue()}', { order: { customer: { vip: true } } }, true],
    ["${S(order.customer).prop('name').stringValue() == 'ann'}", { order: { customer: { name: 'ann' } } }, true],
    ['${S(order).prop("total").value() > 100}', { order: {} }, false],
    ['${amount * 1.2 > limit}', { amount: 100, limit: 110 }, true],
    ['${x % 3 == 1}', { x: 7 }, true],
    ['${(n > 1 ? a : b) == "p"}', { n: 2, a: 'p', b: 'q' }, true],
    ['${items[1].qty - items[0].qty == 2}', { items: [{ qty: 1 }, { qty: 3 }] }, true],
    // EL coerces arithmetic operands to numbers: null is 0, a string is the number it holds.
    ['${a + b == 3}', { a: '1', b: '2' }, true],
    ['${a + 1 == 1}', { a: null }, true],
    ['${-a == -5}', { a: '5' }, true],
    ['${price * qty > 10}', { price: '2.5', qty: 5 }, true],
    // Comparisons: null is below nothing, a number makes both sides numbers, a boolean both booleans.
    ['${total > 100}', { total: '150' }, true],
    ['${total > 100}', { total: null }, false],
    ['${!(total > 100)}', { total: null }, true],
    ['${a < b}', { a: '10', b: 9 }, false],
    ['${a < b}', { a: 'apple', b: 'banana' }, true],
    ['${a < b}', { a: 1, b: null }, false],
    ['${count == 5}', { count: '5' }, true],
    ["${count == '5'}", { count: 5 }, true],
    ['${count != 5}', { count: '5' }, false],
    ['${a == b}', { a: '3', b: 3 }, true],
    ['${a == b}', { a: null, b: null }, true],
    ['${a == b}', { a: null, b: 0 }, false],
    ['${a != b}', { a: null, b: 0 }, true],
    ['${a == b}', { a: 'x', b: 'x' }, true],
    ['${approved == true}', { approved: 'TRUE' }, true],
    ["${approved == 'true'}", { approved: true }, true],
    ["${status == 'open'}", { status: 'open' }, true],
    // ! && || and the test of ?: read null as false and "true" as true.
    ['${!approved}', { approved: null }, true],
    ['${approved && ok}', { approved: 'true', ok: true }, true],
    ['${x > 1 || y}', { x: null, y: 'true' }, true],
    ['${(x ? 1 : 2) == 1}', { x: 'true' }, true],
    ['${(x ? 1 : 2) == 2}', { x: null }, true],
  ])('%s with %j is %s', (source, variables, expected) => {
    expect(evaluateCondition(feelOf(source), variables)).toMatchObject({ ok: true, value: expected });
  });
});

describe('checkFeel', () => {
  it('accepts FEEL that parses', () => {
    expect(checkFeel('a > 5 and b = "x"')).toBeUndefined();
    expect(checkFeel('count(items) > 0')).toBeUndefined();
  });

  it('returns the parse problem otherwise', () => {
    expect(checkFeel('a >')).toMatch(/incomplete/);
    expect(checkFeel('1 +* 2')).toMatch(/cannot be parsed near "\* 2" \(position 3\)/);
    expect(checkFeel('  ')).toMatch(/empty/);
  });
});

describe('evaluateCondition', () => {
  it('holds for true; false and null do not hold', () => {
    expect(evaluateCondition('a', { a: true })).toEqual({ ok: true, value: true, missingVariables: [] });
    expect(evaluateCondition('a', { a: false })).toEqual({ ok: true, value: false, missingVariables: [] });
    expect(evaluateCondition('a', { a: null })).toEqual({ ok: true, value: false, missingVariables: [] });
    expect(evaluateCondition('a', {})).toEqual({ ok: true, value: false, missingVariables: ['a'] });
    expect(evaluateCondition('a > 1', { a: 'x' })).toEqual({ ok: true, value: false, missingVariables: [] });
  });

  it.each([
    [{ a: 'true' }, 'gave string "true", not true or false'],
    [{ a: 1 }, 'gave number 1, not true or false'],
    [{ a: [true] }, 'gave list, not true or false'],
    [{ a: { ok: true } }, 'gave context, not true or false'],
  ])('fails for any other value, as both Camunda engines do: %j', (variables, message) => {
    expect(evaluateCondition('a', variables)).toEqual({ ok: false, message: `Condition "a" ${message}` });
  });

  it.each([
    ['total > 100', {}, ['total']],
    ['total > 100', { total: null }, []],
    ['total > 100', { total: 5 }, []],
    ['x > 1 or y > 2 or x > 3', { x: 5 }, ['y']],
    ['a > b', {}, ['a', 'b']],
    ['order.total > 100', {}, ['order']],
    ['order.total > 100', { order: {} }, []],
    ['count(items) > 0', {}, ['items']],
    ['lenght(name) > 1', { name: 'ab' }, []],
    ['every i in [1, 2] satisfies i > limit', {}, ['limit']],
    ['some i in items satisfies i > 1', {}, ['items']],
    ['order  total > 1', {}, ['order total']],
  ])('names the variables %s reads and %j lacks: %j', (feel, variables, missing) => {
    expect(evaluateCondition(feel, variables)).toMatchObject({ ok: true, missingVariables: missing });
  });

  it('names them for a JUEL condition too, as the translated FEEL reads them', () => {
    expect(evaluateCondition(feelOf('${total > 100 && region == "EU"}'), { region: 'EU' })).toEqual({
      ok: true,
      value: false,
      missingVariables: ['total'],
    });
    expect(evaluateCondition(feelOf('${empty note}'), {})).toEqual({ ok: true, value: true, missingVariables: ['note'] });
  });

  it('answers ok:false with the message instead of throwing', () => {
    const result = evaluateCondition('a >', { a: 1 });
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.message).toMatch(/Condition "a >" failed: Incomplete/);
  });
});

describe("toFeel: Camunda Spin's S() over a JSON variable", () => {
  it('reads S(name).prop("a").prop("b") and a value method as the path name.a.b', () => {
    expect(feelOf('${S(order).prop("customer").prop("name").stringValue() == "ann"}')).toBe('order.customer.name = "ann"');
    expect(feelOf('${S(order.details).prop("rush").boolValue() && ok}')).toBe(`${bool('order.details.rush')} and ${bool('ok')}`);
    expect(feelOf('${S(order)}')).toBe('order');
  });

  it('refuses what it cannot read as a path, naming the part', () => {
    expect(refusalOf('${S(order).jsonPath("$.x").stringValue()}')).toContain("Spin's jsonPath() is not supported");
    expect(refusalOf('${S(order).prop("first-name").value()}')).toContain('prop(...) takes a property name');
    expect(refusalOf('${S(order).prop("a").stringValue().length()}')).toContain('nothing can follow stringValue()');
    expect(refusalOf('${S("{}")}')).toContain('S(...) takes a variable name');
    expect(refusalOf('${S(order).prop(name).value()}')).toContain('prop(...) takes a property name');
  });
});
