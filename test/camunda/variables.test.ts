// Camunda typed variables <-> plain JSON (runtime/camunda/api/variables.ts), no database.
import { describe, expect, it } from 'vitest';
import { formatCamundaDate, parseCamundaDate } from '../../runtime/camunda/api/dates.ts';
import { CamundaError } from '../../runtime/camunda/api/errors.ts';
import { readVariables, renderVariables } from '../../runtime/camunda/api/variables.ts';

function typeOf(input: Record<string, unknown>): string | undefined {
  return readVariables({ v: input }).types[0]?.type;
}

describe('readVariables', () => {
  it('accepts type names in any letter case and answers them capitalised', () => {
    for (const name of ['json', 'Json', 'JSON']) expect(typeOf({ value: '{"a":1}', type: name })).toBe('Json');
    for (const name of ['string', 'String']) expect(typeOf({ value: 'x', type: name })).toBe('String');
    expect(typeOf({ value: 1, type: 'integer' })).toBe('Integer');
    expect(typeOf({ value: 2 ** 40, type: 'LONG' })).toBe('Long');
  });

  it('infers a type when none is given', () => {
    expect(typeOf({ value: 'x' })).toBe('String');
    expect(typeOf({ value: 7 })).toBe('Integer');
    expect(typeOf({ value: 2 ** 33 })).toBe('Long');
    expect(typeOf({ value: 1.5 })).toBe('Double');
    expect(typeOf({ value: false })).toBe('Boolean');
    expect(typeOf({ value: null })).toBe('Null');
    expect(typeOf({ value: { a: 1 } })).toBe('Json');
  });

  it('turns values into plain JSON: dates to ISO UTC, Json parsed, numeric strings to numbers', () => {
    const out = readVariables({
      d: { value: '2024-01-01T10:00:00.000+0200', type: 'date' },
      j: { value: '[1,{"b":true}]', type: 'json' },
      n: { value: '42', type: 'Integer' },
      b: { value: 'true', type: 'Boolean' },
      s: { value: 12, type: 'Short' },
    });
    expect(out.values).toEqual({ d: '2024-01-01T08:00:00.000Z', j: [1, { b: true }], n: 42, b: true, s: 12 });
  });

  it('keeps transient variables apart and stores no type for them', () => {
    const out = readVariables({ t: { value: 5, type: 'Integer', valueInfo: { transient: true } }, k: { value: 'x' } });
    expect(out.transient).toEqual({ t: 5 });
    expect(out.values).toEqual({ k: 'x' });
    expect(out.types.map((w) => w.name)).toEqual(['k']);
  });

  it('keeps File contents out of the native value and accepts mimetype or mimeType', () => {
    const content = Buffer.from('pdf bytes').toString('base64');
    for (const info of [
      { filename: 'a.pdf', mimetype: 'application/pdf' },
      { filename: 'a.pdf', mimeType: 'application/pdf' },
    ]) {
      const out = readVariables({ f: { value: content, type: 'file', valueInfo: info } });
      expect(out.types[0]?.content?.toString()).toBe('pdf bytes');
      expect(out.types[0]?.valueInfo).toEqual({ filename: 'a.pdf', mimeType: 'application/pdf', encoding: null });
      expect(out.values.f).toMatchObject({ camundaType: 'File', filename: 'a.pdf', size: 9 });
    }
  });

  it('refuses values that do not fit their type with InvalidRequestException', () => {
    for (const bad of [
      { value: 'abc', type: 'Integer' },
      { value: 2 ** 31, type: 'Integer' },
      { value: 2 ** 15, type: 'Short' },
      { value: 2 ** 53, type: 'Long' },
      { value: 'yes', type: 'Boolean' },
      { value: 'NaN', type: 'Double' },
      { value: '01/02/2024', type: 'Date' },
      { value: '{', type: 'Json' },
      { value: '***', type: 'Bytes' },
      { value: 5, type: 'String' },
      { value: 'x', type: 'Spin' },
    ]) {
      expect(() => readVariables({ v: bad }), JSON.stringify(bad)).toThrow(CamundaError);
    }
    expect(() => readVariables({ v: 'bare' })).toThrow(CamundaError);
    expect(() => readVariables(JSON.parse('{"__proto__": {"value": 1}}'))).toThrow(CamundaError);
  });

  it('quotes the start of a refused value, not all of it', () => {
    const message = (input: Record<string, unknown>) => {
      try {
        readVariables(input);
      } catch (err) {
        return (err as Error).message;
      }
      throw new Error('accepted');
    };
    expect(message({ n: { value: 'abc', type: 'Integer' } })).toBe(
      "Cannot convert value 'abc' of variable 'n' to type Integer: expected an integer",
    );
    const long = message({ ['v'.repeat(100)]: { value: 'x'.repeat(40_000), type: 'Integer' } });
    expect(long).toBe(
      `Cannot convert value '${'x'.repeat(80)}… (40000 characters)' of variable '${'v'.repeat(80)}… (100 characters)' to type Integer: expected an integer`,
    );
  });
});

describe('renderVariables', () => {
  it('answers stored types while they match, inferred ones otherwise, only the named ones when asked', () => {
    const values = { when: '2024-05-01T12:00:00.000Z', obj: { a: 1 }, n: 3, gone: 'x' };
    const out = renderVariables(
      values,
      [{ name: 'when', type: 'Date', value_info: {}, content: null }],
      ['when', 'obj', 'n', 'missing'],
    );
    expect(out).toEqual({
      when: { type: 'Date', value: '2024-05-01T12:00:00.000+0000', valueInfo: {} },
      obj: { type: 'Json', value: '{"a":1}', valueInfo: {} },
      n: { type: 'Integer', value: 3, valueInfo: {} },
    });
  });
});

describe('Camunda dates', () => {
  it('formats UTC with +0000 and parses the usual zone spellings', () => {
    expect(formatCamundaDate(new Date('2024-05-01T12:00:00Z'))).toBe('2024-05-01T12:00:00.000+0000');
    for (const text of [
      '2024-05-01T14:00:00.000+0200',
      '2024-05-01T14:00:00+02:00',
      '2024-05-01T12:00:00Z',
      '2024-05-01T12:00:00.000000Z',
    ]) {
      expect(parseCamundaDate(text)?.toISOString(), text).toBe('2024-05-01T12:00:00.000Z');
    }
    expect(parseCamundaDate('2024-05-01')).toBeUndefined();
    expect(parseCamundaDate('2024-02-31T00:00:00Z')).toBeUndefined();
    expect(parseCamundaDate('2024-02-29T00:00:00Z')?.toISOString()).toBe('2024-02-29T00:00:00.000Z');
  });
});
