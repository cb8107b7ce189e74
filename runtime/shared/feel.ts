// Sequence-flow conditions: FEEL is the one language the engine evaluates.
// Camunda 7 files write JUEL (`${total > 100}`); a small hand-written parser
// translates the common, side-effect-free subset to FEEL so both kinds of file
// deploy. Nothing here ever calls eval: a string like '${"a && b"}' stays a string.
// Length, depth and evaluation time are bounded by the budget in feel-budget.ts.
import { evaluate, parseExpression } from 'feelin';
import {
  checkFeelSize,
  evaluateInThread,
  feelBudget,
  needsThread,
  notFoundOf,
  type NotFound,
  type ThreadResult,
} from './feel-budget.ts';

export type ToFeelResult = { ok: true; feel: string } | { ok: false; message: string };
/** missingVariables: the variables the condition read and the instance does not have (FEEL reads them as null). */
export type ConditionResult = { ok: true; value: boolean; missingVariables: string[] } | { ok: false; message: string };

const HINT = 'write FEEL such as "= total > 100" or JUEL such as "${total > 100}"';

/** Turns a condition as written in BPMN (FEEL `= ...` or JUEL `${...}` / `#{...}`) into FEEL. */
export function toFeel(source: string): ToFeelResult {
  const text = source.trim();
  if (text === '') return { ok: false, message: `The condition is empty: ${HINT}` };
  if (text.startsWith('=')) {
    const feel = text.slice(1).trim();
    const error = checkFeel(feel);
    return error === undefined ? { ok: true, feel } : { ok: false, message: error };
  }
  const body = /^[$#]\{([\s\S]*)\}$/.exec(text)?.[1];
  if (body === undefined) {
    return { ok: false, message: `The condition "${text}" is neither FEEL nor JUEL: ${HINT}` };
  }
  // The JUEL parser recurses per parenthesis: bound the input before it runs.
  const { maxLength, maxDepth } = feelBudget();
  if (body.length > maxLength)
    return {
      ok: false,
      message: `JUEL expression of ${body.length} characters is longer than the limit of ${maxLength} (BATON_FEEL_MAX_LENGTH)`,
    };
  if (parenthesisDepth(body) > maxDepth)
    return { ok: false, message: `JUEL expression nests parentheses more than ${maxDepth} deep (BATON_FEEL_MAX_DEPTH)` };
  return translateJuel(body);
}

/** Returns the parse error of a FEEL expression, or undefined when it parses. */
export function checkFeel(feel: string): string | undefined {
  if (feel.trim() === '') return 'The FEEL expression is empty';
  if (feel.length > feelBudget().maxLength) return checkFeelSize(feel);
  try {
    let error: string | undefined;
    parseExpression(feel, {}, undefined).iterate({
      enter(node) {
        if (error !== undefined) return false;
        if (!node.type.isError) return undefined;
        error =
          node.from >= feel.trimEnd().length
            ? `FEEL expression "${feel}" is incomplete`
            : `FEEL expression "${feel}" cannot be parsed near "${feel.slice(node.from, node.from + 12)}" (position ${node.from})`;
        return false;
      },
    });
    return error ?? checkFeelSize(feel);
  } catch (cause) {
    return `FEEL expression "${feel}" cannot be parsed: ${messageOf(cause)}`;
  }
}

/**
 * Evaluates a FEEL condition: `true` holds; `false` and null (a comparison with a variable that
 * is missing or null) do not. Any other value fails, as Camunda 7 and Zeebe fail a condition that
 * is not a boolean: a text "true" or a number taken as false would choose a path in silence.
 */
export function evaluateCondition(feel: string, variables: Record<string, unknown>): ConditionResult {
  const result = evaluateBudgeted(feel, variables);
  if (!result.ok) return { ok: false, message: `Condition "${feel}" failed: ${result.message}` };
  if (result.type !== 'boolean' && result.type !== 'null') {
    const type = result.type === 'object' ? 'context' : result.type;
    const shown = result.value === null ? type : `${type} ${JSON.stringify(result.value)}`;
    return { ok: false, message: `Condition "${feel}" gave ${shown}, not true or false` };
  }
  return { ok: true, value: result.value === true, missingVariables: missingVariablesOf(feel, result.notFound) };
}

/**
 * The names an evaluation looked up and did not find, first use first. A variable set to
 * null is present. Not counted: the name of an unknown function (feelin reports the call's
 * name as a missing variable too) and a missing key inside a present context (`order.total`).
 */
function missingVariablesOf(feel: string, notFound: NotFound[]): string[] {
  const calls = new Set(notFound.filter((n) => n.type === 'function').map((n) => n.from));
  const names = notFound
    .filter((n) => n.type === 'variable' && !calls.has(n.from))
    .map((n) => feel.slice(n.from, n.to).trim().replace(/\s+/g, ' '));
  return [...new Set(names)];
}

/** Evaluates a FEEL expression to a correlation key: a string or number becomes its text; anything else is refused. */
export function evaluateKey(
  feel: string,
  variables: Record<string, unknown>,
): { ok: true; value: string } | { ok: false; message: string } {
  const result = evaluateBudgeted(feel, variables);
  if (!result.ok) return { ok: false, message: `expression "${feel}" failed: ${result.message}` };
  const { value } = result;
  if (typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value))) {
    const text = String(value);
    const max = feelBudget().maxResultLength;
    if (text.length > max)
      return {
        ok: false,
        message: `expression "${feel}" gave a key of ${text.length} characters, longer than the limit of ${max} (BATON_FEEL_MAX_RESULT_LENGTH)`,
      };
    return { ok: true, value: text };
  }
  return { ok: false, message: `expression "${feel}" gave ${result.type}, not a string or number` };
}

/**
 * Evaluates a FEEL expression to its whole value as JSON (lists and contexts included; dates and
 * durations become their text), in the budgeted thread when it loops: what a script task computes.
 */
export function evaluateJson(
  feel: string,
  variables: Record<string, unknown>,
): { ok: true; value: unknown } | { ok: false; message: string } {
  try {
    if (needsThread(feel)) {
      const result = evaluateInThread(feel, variables, true);
      return result.ok
        ? { ok: true, value: result.whole ?? null }
        : { ok: false, message: `expression "${feel}" failed: ${result.message}` };
    }
    return { ok: true, value: JSON.parse(JSON.stringify(evaluate(feel, variables).value ?? null) ?? 'null') };
  } catch (cause) {
    return { ok: false, message: `expression "${feel}" failed: ${messageOf(cause)}` };
  }
}

/** Inline for straight-line expressions, in the budgeted thread for ones that loop. */
function evaluateBudgeted(feel: string, variables: Record<string, unknown>): ThreadResult {
  try {
    if (needsThread(feel)) return evaluateInThread(feel, variables);
    const evaluated = evaluate(feel, variables);
    const value: unknown = evaluated.value;
    const notFound = notFoundOf(evaluated.warnings);
    if (value === null || value === undefined) return { ok: true, value: null, type: 'null', notFound };
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean')
      return { ok: true, value, type: typeof value, notFound };
    return { ok: true, value: null, type: Array.isArray(value) ? 'list' : typeof value, notFound };
  } catch (cause) {
    return { ok: false, message: messageOf(cause) };
  }
}

/** Deepest nesting of ( outside string literals. */
function parenthesisDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let quote: string | undefined;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quote) {
      if (c === '\\') i++;
      else if (c === quote) quote = undefined;
    } else if (c === '"' || c === "'") quote = c;
    else if (c === '(') max = Math.max(max, ++depth);
    else if (c === ')') depth--;
  }
  return max;
}

function messageOf(cause: unknown): string {
  return cause instanceof Error ? cause.message : String(cause);
}

// ---------------------------------------------------------------- JUEL subset

type Token =
  | { kind: 'name'; text: string; at: number }
  | { kind: 'number'; text: string; at: number }
  | { kind: 'string'; value: string; at: number }
  | { kind: 'symbol'; text: string; at: number }
  | { kind: 'end'; at: number };

type Ast =
  /** text: a string literal's value */
  | { type: 'literal'; feel: string; text?: string }
  | { type: 'path'; names: string[] }
  | { type: 'not' | 'negate' | 'empty'; operand: Ast }
  | { type: 'compare'; op: string; left: Ast; right: Ast }
  | { type: 'arith'; op: '+' | '-' | '*' | '/' | 'mod'; left: Ast; right: Ast }
  | { type: 'logic'; op: 'and' | 'or'; left: Ast; right: Ast }
  | { type: 'choose'; test: Ast; then: Ast; otherwise: Ast };

/** Thrown inside the translator only; translateJuel turns it into a result. */
class UnsupportedJuel extends Error {}

const SYMBOLS = [
  '&&',
  '||',
  '==',
  '!=',
  '<=',
  '>=',
  '<',
  '>',
  '!',
  '(',
  ')',
  '[',
  ']',
  '.',
  '-',
  '+',
  '*',
  '/',
  '%',
  '?',
  ':',
] as const;
/** Symbols JUEL knows but the subset does not, with what to tell the author. */
const UNSUPPORTED_SYMBOLS: Record<string, string> = {
  ',': 'argument lists are not supported',
  '=': 'assignment (=) is not supported; compare with ==',
  ';': 'statement lists (;) are not supported',
  '{': 'only one ${...} expression is supported',
  '}': 'only one ${...} expression is supported',
};
const COMPARISONS: Record<string, string> = {
  '==': '=',
  eq: '=',
  '!=': '!=',
  ne: '!=',
  '<': '<',
  lt: '<',
  '<=': '<=',
  le: '<=',
  '>': '>',
  gt: '>',
  '>=': '>=',
  ge: '>=',
};
const LITERALS = ['true', 'false', 'null'] as const;
/** Spin methods that end a chain with the node's value. */
const SPIN_VALUES = ['stringValue', 'numberValue', 'boolValue', 'value'];
const UNSUPPORTED_KEYWORDS = ['instanceof', 'new'] as const;
/** JUEL arithmetic operators, symbols and words, with the FEEL operator each stands for. */
const ADDITIVE: Record<string, '+' | '-'> = { '+': '+', '-': '-' };
const MULTIPLICATIVE: Record<string, '*' | '/' | 'mod'> = { '*': '*', '/': '/', div: '/', '%': 'mod', mod: 'mod' };
/** Words FEEL reserves: a JUEL variable with such a name cannot be written in FEEL. */
const FEEL_KEYWORDS = [
  'for',
  'return',
  'if',
  'then',
  'else',
  'some',
  'every',
  'satisfies',
  'in',
  'instance',
  'of',
  'between',
  'function',
  'external',
] as const;

function translateJuel(body: string): ToFeelResult {
  try {
    const parser = new JuelParser(tokenize(body));
    const feel = printFeel(parser.parseAll());
    const error = checkFeel(feel);
    if (error !== undefined)
      return { ok: false, message: `JUEL "${body.trim()}" translates to FEEL that does not parse: ${error}` };
    return { ok: true, feel };
  } catch (cause) {
    if (!(cause instanceof UnsupportedJuel)) throw cause;
    return {
      ok: false,
      message: `JUEL condition "${body.trim()}": ${cause.message}; Baton supports names, a.b, a[0], a["key"], numbers, strings, true/false/null, comparisons, && || ! (and/or/not), eq ne lt gt le ge, + - * / div % mod, ? :, parentheses, empty, execution.getVariable("name") and Spin's S(name).prop("key")...stringValue()`,
    };
  }
}

function tokenize(body: string): Token[] {
  const tokens: Token[] = [];
  let at = 0;
  while (at < body.length) {
    const space = /^\s+/.exec(body.slice(at))?.[0];
    if (space !== undefined) {
      at += space.length;
      continue;
    }
    const { token, length } = readToken(body, at);
    tokens.push(token);
    at += length;
  }
  tokens.push({ kind: 'end', at });
  return tokens;
}

function readToken(body: string, at: number): { token: Token; length: number } {
  const rest = body.slice(at);
  if (rest[0] === '"' || rest[0] === "'") return readString(body, at);
  const name = /^[A-Za-z_$][A-Za-z0-9_$]*/.exec(rest)?.[0];
  if (name !== undefined) return { token: { kind: 'name', text: name, at }, length: name.length };
  const number = /^\d+(\.\d+)?/.exec(rest)?.[0];
  if (number !== undefined) {
    if (/^[A-Za-z_.]/.test(rest.slice(number.length))) {
      throw new UnsupportedJuel(`the number format at "${rest.slice(0, 12)}" is not supported`);
    }
    return { token: { kind: 'number', text: number, at }, length: number.length };
  }
  const symbol = SYMBOLS.find((s) => rest.startsWith(s));
  if (symbol !== undefined) return { token: { kind: 'symbol', text: symbol, at }, length: symbol.length };
  throw new UnsupportedJuel(describeUnsupported(rest[0] ?? ''));
}

/** Reads a JUEL string literal (quotes ' or ", backslash escapes) starting at `start`. */
function readString(body: string, start: number): { token: Token; length: number } {
  const quote = body[start];
  let value = '';
  for (let at = start + 1; at < body.length; at++) {
    if (body[at] === quote) return { token: { kind: 'string', value, at: start }, length: at + 1 - start };
    if (body[at] === '\\' && at + 1 < body.length) at++;
    value += body[at];
  }
  throw new UnsupportedJuel(`the string starting at position ${start} is not closed`);
}

function describeUnsupported(text: string): string {
  return UNSUPPORTED_SYMBOLS[text] ?? `the character "${text}" is not supported`;
}

class JuelParser {
  private index = 0;
  constructor(private readonly tokens: Token[]) {}

  parseAll(): Ast {
    const ast = this.parseChoice();
    const next = this.peek();
    if (next.kind !== 'end') throw new UnsupportedJuel(this.describe(next));
    return ast;
  }

  /** `test ? a : b`, right-associative, the loosest of all. */
  private parseChoice(): Ast {
    const test = this.parseOr();
    if (!isWord(this.peek(), '?', '?')) return test;
    this.index++;
    const then = this.parseChoice();
    this.expect(':');
    return { type: 'choose', test, then, otherwise: this.parseChoice() };
  }

  private parseOr(): Ast {
    return this.parseChain(
      () => this.parseAnd(),
      (t) => (isWord(t, '||', 'or') ? 'or' : undefined),
    );
  }

  private parseAnd(): Ast {
    return this.parseChain(
      () => this.parseEquality(),
      (t) => (isWord(t, '&&', 'and') ? 'and' : undefined),
    );
  }

  private parseEquality(): Ast {
    return this.parseChain(
      () => this.parseRelational(),
      (t) => comparisonOf(t, ['==', '!=', 'eq', 'ne']),
    );
  }

  private parseRelational(): Ast {
    return this.parseChain(
      () => this.parseAdditive(),
      (t) => comparisonOf(t, ['<', '<=', '>', '>=', 'lt', 'le', 'gt', 'ge']),
    );
  }

  private parseAdditive(): Ast {
    return this.parseChain(
      () => this.parseMultiplicative(),
      (t) => (t.kind === 'symbol' ? ADDITIVE[t.text] : undefined),
    );
  }

  private parseMultiplicative(): Ast {
    return this.parseChain(
      () => this.parseUnary(),
      (t) => (t.kind === 'symbol' || t.kind === 'name' ? MULTIPLICATIVE[t.text] : undefined),
    );
  }

  /** Left-associative binary chain; `operatorOf` names the FEEL operator a token stands for. */
  private parseChain(parseOperand: () => Ast, operatorOf: (token: Token) => string | undefined): Ast {
    let left = parseOperand();
    for (let op = operatorOf(this.peek()); op !== undefined; op = operatorOf(this.peek())) {
      this.index++;
      const right = parseOperand();
      left =
        op === 'and' || op === 'or'
          ? { type: 'logic', op, left, right }
          : op === '+' || op === '-' || op === '*' || op === '/' || op === 'mod'
            ? { type: 'arith', op, left, right }
            : { type: 'compare', op, left, right };
    }
    return left;
  }

  private parseUnary(): Ast {
    const token = this.peek();
    const type = isWord(token, '!', 'not')
      ? 'not'
      : isWord(token, '-', '-')
        ? 'negate'
        : isWord(token, 'empty', 'empty')
          ? 'empty'
          : undefined;
    if (type === undefined) return this.parsePrimary();
    this.index++;
    return { type, operand: this.parseUnary() };
  }

  private parsePrimary(): Ast {
    const token = this.next();
    if (token.kind === 'number') return { type: 'literal', feel: token.text };
    if (token.kind === 'string') return { type: 'literal', feel: quoteFeel(token.value), text: token.value };
    if (token.kind === 'symbol' && token.text === '(') {
      const inner = this.parseChoice();
      const close = this.next();
      if (close.kind !== 'symbol' || close.text !== ')') throw new UnsupportedJuel(`a ")" is missing at position ${close.at}`);
      return inner;
    }
    if (token.kind !== 'name' || isReserved(token.text)) throw new UnsupportedJuel(this.describe(token));
    if ((LITERALS as readonly string[]).includes(token.text)) return { type: 'literal', feel: token.text };
    return this.parsePath(token.text);
  }

  private parsePath(first: string): Ast {
    if (first === 'S' && isWord(this.peek(), '(', '(')) return this.parseSpin();
    if (first === 'execution' && this.isGetVariable()) return { type: 'path', names: [this.parseGetVariable()] };
    const names = [checkName(first)];
    for (;;) {
      if (isWord(this.peek(), '[', '[')) {
        names[names.length - 1] += this.parseIndex();
        continue;
      }
      if (!isWord(this.peek(), '.', '.')) break;
      this.index++;
      const name = this.next();
      if (name.kind !== 'name') throw new UnsupportedJuel(`a property name is expected after "." at position ${name.at}`);
      names.push(checkName(name.text));
    }
    const after = this.peek();
    if (after.kind === 'symbol' && after.text === '(')
      throw new UnsupportedJuel(`method and function calls (${names.join('.')}(...)) are not supported`);
    return { type: 'path', names };
  }

  /**
   * Camunda Spin over a JSON variable, `S(order).prop("customer").prop("name").stringValue()`:
   * the path order.customer.name. FEEL reads a missing property as null where Spin throws.
   */
  private parseSpin(): Ast {
    this.index++;
    const target = this.next();
    if (target.kind !== 'name' || isReserved(target.text))
      throw new UnsupportedJuel(`S(...) takes a variable name at position ${target.at}`);
    const names = (this.parsePath(target.text) as { names: string[] }).names;
    this.expect(')');
    while (isWord(this.peek(), '.', '.')) {
      this.index++;
      const method = this.next();
      if (method.kind !== 'name') throw new UnsupportedJuel(`a Spin method is expected after "." at position ${method.at}`);
      this.expect('(');
      if (method.text === 'prop') {
        const key = this.next();
        if (key.kind !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(key.value))
          throw new UnsupportedJuel(`prop(...) takes a property name in quotes (letters, digits, _) at position ${key.at}`);
        names.push(checkName(key.value));
        this.expect(')');
        continue;
      }
      if (!SPIN_VALUES.includes(method.text))
        throw new UnsupportedJuel(
          `Spin's ${method.text}() is not supported; read JSON with prop("name") and stringValue(), numberValue(), boolValue() or value()`,
        );
      this.expect(')');
      if (isWord(this.peek(), '.', '.')) throw new UnsupportedJuel(`nothing can follow ${method.text}()`);
    }
    return { type: 'path', names };
  }

  /**
   * `[0]` on a list is FEEL's `[1]` (FEEL counts from 1); `["key"]` on a map is `.key`. Only
   * literal indexes: a computed one could be either.
   */
  private parseIndex(): string {
    this.index++;
    const at = this.next();
    this.expect(']');
    if (at.kind === 'number' && /^\d+$/.test(at.text)) return `[${Number(at.text) + 1}]`;
    if (at.kind === 'string' && /^[A-Za-z_][A-Za-z0-9_]*$/.test(at.value)) return `.${checkName(at.value)}`;
    throw new UnsupportedJuel(`index access takes a whole number or a property name in quotes, at position ${at.at}`);
  }

  private isGetVariable(): boolean {
    const [dot, method, open] = [this.tokens[this.index], this.tokens[this.index + 1], this.tokens[this.index + 2]];
    return (
      dot !== undefined &&
      isWord(dot, '.', '.') &&
      method?.kind === 'name' &&
      method.text === 'getVariable' &&
      open !== undefined &&
      isWord(open, '(', '(')
    );
  }

  /** Camunda 7's `execution.getVariable("name")`: the variable itself. */
  private parseGetVariable(): string {
    this.index += 3;
    const name = this.next();
    if (name.kind !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(name.value))
      throw new UnsupportedJuel(`execution.getVariable(...) takes a variable name in quotes at position ${name.at}`);
    this.expect(')');
    return checkName(name.value);
  }

  private expect(symbol: string): void {
    const token = this.next();
    if (!isWord(token, symbol, symbol)) throw new UnsupportedJuel(`a "${symbol}" is missing at position ${token.at}`);
  }

  private describe(token: Token): string {
    if (token.kind === 'end') return 'the expression ends too early';
    if (token.kind === 'name') {
      if ((UNSUPPORTED_KEYWORDS as readonly string[]).includes(token.text))
        return `the operator "${token.text}" is not supported`;
      return `"${token.text}" is not expected at position ${token.at}`;
    }
    if (token.kind === 'symbol') return `"${token.text}" is not expected at position ${token.at}`;
    return `a value is not expected at position ${token.at}`;
  }

  private peek(): Token {
    return this.tokens[this.index] ?? { kind: 'end', at: -1 };
  }

  private next(): Token {
    const token = this.peek();
    this.index++;
    return token;
  }
}

function isWord(token: Token, symbol: string, word: string): boolean {
  return (token.kind === 'symbol' && token.text === symbol) || (token.kind === 'name' && token.text === word);
}

function comparisonOf(token: Token, allowed: string[]): string | undefined {
  if (token.kind !== 'symbol' && token.kind !== 'name') return undefined;
  return allowed.includes(token.text) ? COMPARISONS[token.text] : undefined;
}

/** JUEL operator words that cannot start a value. */
function isReserved(name: string): boolean {
  return ['and', 'or', 'not', 'eq', 'ne', 'lt', 'gt', 'le', 'ge', 'empty', ...UNSUPPORTED_KEYWORDS].includes(name);
}

function checkName(name: string): string {
  if (name.includes('$')) throw new UnsupportedJuel(`the name "${name}" contains "$", which FEEL names cannot`);
  if ((FEEL_KEYWORDS as readonly string[]).includes(name))
    throw new UnsupportedJuel(`the name "${name}" is a FEEL keyword; rename the variable`);
  return name;
}

function quoteFeel(value: string): string {
  const escaped = value
    .replace(/\\/g, '\\\\')
    .replace(/"/g, '\\"')
    .replace(/\n/g, '\\n')
    .replace(/\r/g, '\\r')
    .replace(/\t/g, '\\t');
  return `"${escaped}"`;
}

/** Binding strength in FEEL: if-then-else < or < and < comparison < + - < * / < prefix minus < atoms. */
function precedenceOf(ast: Ast): number {
  if (ast.type === 'choose') return 0;
  if (ast.type === 'logic') return ast.op === 'or' ? 1 : 2;
  if (ast.type === 'compare') return 3;
  if (ast.type === 'arith') return ast.op === '+' || ast.op === '-' ? 4 : ast.op === 'mod' ? 7 : 5;
  if (ast.type === 'negate') return 6;
  return 7;
}

function printFeel(ast: Ast): string {
  switch (ast.type) {
    case 'literal':
      return ast.feel;
    case 'path':
      return ast.names.join('.');
    case 'not':
      return `not(${printBoolean(ast.operand, 0)})`;
    case 'negate':
      return `-${printNumber(ast.operand, 6)}`;
    case 'empty':
      return printEmpty(wrap(ast.operand, 6));
    // Left-associative: the right operand of a - b - c, or of a / b / c, keeps its parentheses.
    case 'arith':
      if (ast.op === 'mod') return `modulo(${printNumber(ast.left, 0)}, ${printNumber(ast.right, 0)})`;
      return `${printNumber(ast.left, precedenceOf(ast) - 1)} ${ast.op} ${printNumber(ast.right, precedenceOf(ast))}`;
    case 'choose':
      return `if ${printBoolean(ast.test, 0)} then ${wrap(ast.then, 0)} else ${wrap(ast.otherwise, 0)}`;
    case 'compare':
      return ast.op === '=' || ast.op === '!=' ? printEquality(ast.op, ast.left, ast.right) : printRelational(ast);
    case 'logic':
      return `${printBoolean(ast.left, precedenceOf(ast) - 1)} ${ast.op} ${printBoolean(ast.right, precedenceOf(ast) - 1)}`;
  }
}

/** What a JUEL operand is known to be before it is evaluated; `unknown` for variables and choices. */
type Known = 'number' | 'string' | 'boolean' | 'null' | 'unknown';

function knownOf(ast: Ast): Known {
  switch (ast.type) {
    case 'literal':
      if (ast.text !== undefined) return 'string';
      if (ast.feel === 'null') return 'null';
      return ast.feel === 'true' || ast.feel === 'false' ? 'boolean' : 'number';
    case 'arith':
    case 'negate':
      return 'number';
    case 'compare':
    case 'logic':
    case 'not':
    case 'empty':
      return 'boolean';
    default:
      return 'unknown';
  }
}

/**
 * `<`, `<=`, `>`, `>=` as EL compares: false when either side is null; when either is a number
 * both are numbers ("150" > 100 holds); otherwise as they are (strings by their text). FEEL
 * would give null for the first two, which `!` and `&&` would carry on.
 */
function printRelational(ast: Ast & { type: 'compare' }): string {
  const sides = [ast.left, ast.right].map((side) => ({ side, known: knownOf(side) }));
  if (sides.some((s) => s.known === 'null')) return 'false';
  const [left, right] = sides as [{ side: Ast; known: Known }, { side: Ast; known: Known }];
  if (left.known === right.known && left.known !== 'unknown') return `${wrap(ast.left, 3)} ${ast.op} ${wrap(ast.right, 3)}`;
  const numeric = `${numberOf(left.side, left.known)} ${ast.op} ${numberOf(right.side, right.known)}`;
  const unknown = sides.filter((s) => s.known === 'unknown').map((s) => wrap(s.side, 6));
  const nullTest = unknown.map((x) => `${x} = null`).join(' or ');
  if (sides.some((s) => s.known === 'number')) return `(if ${nullTest} then false else ${numeric})`;
  const numberTest = unknown.map((x) => `${x} instance of number`).join(' or ');
  const asWritten = `${wrap(ast.left, 3)} ${ast.op} ${wrap(ast.right, 3)}`;
  return `(if ${nullTest} then false else if ${numberTest} then ${numeric} else ${asWritten})`;
}

/**
 * `==` and `!=` as EL compares: null equals only null; when either side is a number both are
 * numbers ("5" == 5); when either is a boolean both are booleans ("true" == true); otherwise
 * as they are. A string literal that holds neither a number nor a boolean compares as text.
 */
function printEquality(op: '=' | '!=', a: Ast, b: Ast): string {
  const [left, right] = [knownOf(a), knownOf(b)];
  const plain = `${wrap(a, 3)} ${op} ${wrap(b, 3)}`;
  if ((left === right && left !== 'unknown') || left === 'null' || right === 'null') return plain;
  const equal = ((): string => {
    if (left === 'number' || right === 'number') return `${numberOf(a, left)} = ${numberOf(b, right)}`;
    if (left === 'boolean' || right === 'boolean') return `${booleanOf(a, left)} = ${booleanOf(b, right)}`;
    const unknown = [a, b].filter((side) => knownOf(side) === 'unknown').map((side) => wrap(side, 6));
    const text = [a, b].find((side) => knownOf(side) === 'string');
    const asText = text?.type === 'literal' ? (text.text ?? '') : undefined;
    const tests: string[] = [];
    if (asText === undefined || (asText.trim() !== '' && Number.isFinite(Number(asText))))
      tests.push(
        `if ${unknown.map((x) => `${x} instance of number`).join(' or ')} then ${numberOf(a, left)} = ${numberOf(b, right)}`,
      );
    if (asText === undefined || /^(true|false)$/i.test(asText))
      tests.push(
        `if ${unknown.map((x) => `${x} instance of boolean`).join(' or ')} then ${booleanOf(a, left)} = ${booleanOf(b, right)}`,
      );
    if (tests.length === 0) return `${wrap(a, 3)} = ${wrap(b, 3)}`;
    return `(${tests.join(' else ')} else ${wrap(a, 3)} = ${wrap(b, 3)})`;
  })();
  return op === '=' ? equal : `not(${equal})`;
}

/** An operand of a comparison as a number: a string is the number it holds. */
function numberOf(ast: Ast, known: Known): string {
  if (known === 'number') return wrap(ast, 3);
  if (known === 'string') return `number(${printFeel(ast)})`;
  const x = wrap(ast, 6);
  return `(if ${x} instance of string then number(${x}) else ${x})`;
}

/** An operand of a comparison as a boolean: a string is true when it says "true", in any case. */
function booleanOf(ast: Ast, known: Known): string {
  if (known === 'boolean') return wrap(ast, 3);
  if (ast.type === 'literal' && ast.text !== undefined) return String(ast.text.toLowerCase() === 'true');
  const x = wrap(ast, 6);
  return `(if ${x} instance of string then lower case(${x}) = "true" else ${x})`;
}

/**
 * An operand of `!`, `&&`, `||` or the test of `? :`, coerced to a boolean as EL coerces it:
 * null is false and a string is true when it says "true". What is a boolean already is printed
 * as it is.
 */
function printBoolean(ast: Ast, limit: number): string {
  const known = knownOf(ast);
  if (known === 'boolean') return wrap(ast, limit);
  if (known === 'null') return 'false';
  if (known === 'string') return booleanOf(ast, known);
  if (known === 'number') return wrap(ast, limit);
  const x = wrap(ast, 6);
  return `(if ${x} = null then false else if ${x} instance of string then lower case(${x}) = "true" else ${x})`;
}

/**
 * An operand of JUEL arithmetic, coerced to a number as EL coerces it: null is 0 and a string is
 * the number it holds ("1" + "2" is 3, never "12"); a string that holds none gives null, as FEEL
 * gives for a number and a text. What is a number already is printed as it is.
 */
function printNumber(ast: Ast, limit: number): string {
  if (ast.type === 'literal') return ast.feel === 'null' ? '0' : ast.feel.startsWith('"') ? `number(${ast.feel})` : ast.feel;
  if (ast.type !== 'path' && ast.type !== 'choose') return wrap(ast, limit);
  const x = wrap(ast, 6);
  return `(if ${x} = null then 0 else if ${x} instance of string then number(${x}) else ${x})`;
}

/** Parenthesizes `ast` when it binds as loosely as `limit` or looser. */
function wrap(ast: Ast, limit: number): string {
  const text = printFeel(ast);
  return precedenceOf(ast) <= limit ? `(${text})` : text;
}

/** JUEL `empty x`: null, "", an empty list or an empty map. Each test is false (never null) for other types. */
function printEmpty(x: string): string {
  return (
    `(${x} = null or (${x} instance of string and string length(${x}) = 0)` +
    ` or (${x} instance of list and count(${x}) = 0)` +
    ` or (${x} instance of context and count(get entries(${x})) = 0))`
  );
}
