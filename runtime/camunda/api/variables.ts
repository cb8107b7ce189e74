// Camunda typed variables <-> Baton's plain JSON variables plus type rows (migration 0003).
// Type names are read in any letter case and answered capitalised, as Camunda does.
import { createHash } from 'node:crypto';
import type { Variables } from '../../model/effects.ts';
import type { CamundaVariables } from '../engine/tasks.ts';
import { CamundaType, type StoredType, type TypedWrite } from '../store/variables.ts';
import { formatCamundaDate, parseCamundaDate } from './dates.ts';
import { invalidRequest } from './errors.ts';
import { MAX_JSON_DEPTH_CEILING, nestsDeeperThan } from '../../security/limits.ts';

export interface WireVariable {
  value?: unknown;
  type?: string | null;
  valueInfo?: Record<string, unknown> | null;
}

const TYPES_BY_LOWER = new Map(Object.values(CamundaType).map((t) => [t.toLowerCase(), t]));
const INT32 = 2 ** 31;

/** Reads a Camunda variables map; throws InvalidRequestException for a value that does not fit its type. */
export function readVariables(input: unknown): CamundaVariables {
  const out: CamundaVariables = { values: {}, transient: {}, types: [] };
  if (input === undefined || input === null) return out;
  if (typeof input !== 'object' || Array.isArray(input))
    throw invalidRequest('variables must be a JSON object of {value, type, valueInfo}');
  for (const [name, raw] of Object.entries(input as Record<string, unknown>)) {
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
      throw invalidRequest(`Variable '${name}' must be an object {value, type, valueInfo}`);
    // A plain assignment of this name would replace the object's prototype instead of adding a variable.
    if (name === '__proto__') throw invalidRequest('A variable may not be named __proto__');
    const write = readVariable(name, raw as WireVariable);
    if ((raw as WireVariable).valueInfo?.transient === true) out.transient[name] = write.nativeValue;
    else {
      out.values[name] = write.nativeValue;
      out.types.push(write);
    }
  }
  return out;
}

/** Reads one Camunda variable; throws InvalidRequestException for a value that does not fit its type. */
export function readVariable(name: string, v: WireVariable): TypedWrite {
  const type = v.type === undefined || v.type === null ? inferType(v.value) : TYPES_BY_LOWER.get(String(v.type).toLowerCase());
  if (!type) throw invalidRequest(`Unsupported value type '${String(v.type)}' of variable '${name}'`);
  const info = { ...(v.valueInfo ?? {}) };
  delete info.transient;
  const fail = (why: string) =>
    invalidRequest(`Cannot convert value '${excerpt(String(v.value))}' of variable '${excerpt(name)}' to type ${type}: ${why}`);
  const value = v.value;
  const write = (nativeValue: unknown, content: Buffer | null = null, valueInfo: Record<string, unknown> = {}): TypedWrite => ({
    name,
    nativeValue,
    type,
    valueInfo,
    content,
  });
  if ((value === null || value === undefined) && type !== 'File' && type !== 'Bytes')
    return write(null, null, type === 'Object' ? info : {});
  switch (type) {
    case 'String':
    case 'Xml':
      if (typeof value !== 'string') throw fail('expected a string');
      return write(value);
    case 'Integer':
    case 'Short':
    case 'Long':
      return write(readInteger(value, type, fail));
    case 'Double': {
      const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
      if (typeof n !== 'number' || !Number.isFinite(n)) throw fail('expected a number');
      return write(n);
    }
    case 'Boolean':
      if (value === 'true' || value === 'false') return write(value === 'true');
      if (typeof value !== 'boolean') throw fail('expected true or false');
      return write(value);
    case 'Date': {
      const date = typeof value === 'string' ? parseCamundaDate(value) : undefined;
      if (!date) throw fail("expected a date as yyyy-MM-dd'T'HH:mm:ss.SSSZ");
      return write(date.toISOString());
    }
    case 'Json':
      return write(readJson(value, fail));
    case 'Object':
      if (typeof value !== 'string') throw fail('expected the serialized value as a string');
      return write(value, null, info);
    case 'Null':
      return write(null);
    case 'Bytes':
    case 'File':
      return readBinary(name, type, value, info, fail);
  }
}

/** How much of a refused value an error message quotes: the message names the value, it does not carry it back. */
const EXCERPT_CHARS = 80;
function excerpt(text: string): string {
  return text.length <= EXCERPT_CHARS ? text : `${text.slice(0, EXCERPT_CHARS)}… (${text.length} characters)`;
}

function inferType(value: unknown): CamundaType {
  if (value === null || value === undefined) return 'Null';
  if (typeof value === 'string') return 'String';
  if (typeof value === 'boolean') return 'Boolean';
  if (typeof value === 'number') return !Number.isInteger(value) ? 'Double' : Math.abs(value) < INT32 ? 'Integer' : 'Long';
  return 'Json';
}

function readInteger(value: unknown, type: 'Integer' | 'Short' | 'Long', fail: (why: string) => Error): number {
  const n = typeof value === 'string' && /^-?\d+$/.test(value) ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isInteger(n)) throw fail('expected an integer');
  const limit = type === 'Short' ? 2 ** 15 : type === 'Integer' ? INT32 : 2 ** 63;
  if (n < -limit || n >= limit) throw fail(`out of the ${type} range`);
  // JSON numbers in JavaScript are exact only up to 2^53: refuse rather than round silently.
  if (!Number.isSafeInteger(n)) throw fail('Baton keeps Long values exactly only within ±(2^53 - 1)');
  return n;
}

function readJson(value: unknown, fail: (why: string) => Error): unknown {
  if (typeof value !== 'string') return value; // already structured: the body's nesting limit covered it
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch (err) {
    throw fail(`not valid JSON (${(err as Error).message})`);
  }
  // JSON text inside a string escapes the body's limit; past this depth storing it overflows the stack.
  if (nestsDeeperThan(parsed, MAX_JSON_DEPTH_CEILING))
    throw fail(`its JSON nests arrays and objects more than ${MAX_JSON_DEPTH_CEILING} levels deep`);
  return parsed;
}

function readBinary(
  name: string,
  type: 'Bytes' | 'File',
  value: unknown,
  info: Record<string, unknown>,
  fail: (why: string) => Error,
): TypedWrite {
  const text = value === null || value === undefined ? '' : value;
  if (typeof text !== 'string' || !/^[A-Za-z0-9+/\r\n]*={0,2}\s*$/.test(text)) throw fail('expected base64 text');
  const content = Buffer.from(text, 'base64');
  const sha256 = createHash('sha256').update(content).digest('hex');
  if (type === 'Bytes')
    return { name, type, nativeValue: { camundaType: 'Bytes', size: content.length, sha256 }, valueInfo: {}, content };
  const filename = typeof info.filename === 'string' && info.filename !== '' ? info.filename : name;
  const mimeType = stringOrNull(info.mimeType ?? info.mimetype);
  const encoding = stringOrNull(info.encoding);
  const valueInfo = { filename, mimeType, encoding };
  return { name, type, nativeValue: { camundaType: 'File', ...valueInfo, size: content.length, sha256 }, valueInfo, content };
}

function stringOrNull(v: unknown): string | null {
  return typeof v === 'string' && v !== '' ? v : null;
}

/** Camunda's answer for each variable (all, or only `names`): stored type when it still matches, else inferred. */
export function renderVariables(values: Variables, types: StoredType[], names?: string[] | null): Record<string, WireVariable> {
  const byName = new Map(types.map((t) => [t.name, t]));
  const out: Record<string, WireVariable> = {};
  for (const name of names ?? Object.keys(values)) {
    if (!(name in values)) continue;
    out[name] = renderVariable(values[name], byName.get(name));
  }
  return out;
}

function renderVariable(value: unknown, stored: StoredType | undefined): WireVariable {
  const type = stored?.type ?? inferType(value);
  switch (type) {
    case 'Date':
      return { type, value: typeof value === 'string' ? formatCamundaDate(value) : null, valueInfo: {} };
    case 'Json':
      return { type, value: value === null ? null : JSON.stringify(value), valueInfo: {} };
    case 'Object':
      return { type, value, valueInfo: stored?.value_info ?? {} };
    case 'Bytes':
      return { type, value: stored?.content ? stored.content.toString('base64') : null, valueInfo: {} };
    case 'File': {
      const info = stored?.value_info ?? {};
      // Camunda answers mimeType; the official JS client re-sends what it read as mimetype, so both are given.
      return {
        type,
        value: null,
        valueInfo: {
          filename: info.filename,
          mimeType: info.mimeType ?? null,
          mimetype: info.mimeType ?? null,
          encoding: info.encoding ?? null,
        },
      };
    }
    default:
      return { type, value: value ?? null, valueInfo: {} };
  }
}
