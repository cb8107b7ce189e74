// ajv validators for every schema in schemas/api, looked up by file name.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsPlugin from 'ajv-formats';
import { BatonError } from './errors.ts';
import { isUuid } from './uuid.ts';

const schemaDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../schemas/api');
const BASE_ID = 'https://baton.dev/schemas/api/';

// ajv-formats ships CommonJS; its default export is the plugin function.
const addFormats = addFormatsPlugin as unknown as (ajv: Ajv) => Ajv;

function loadSchemas(coerceTypes: boolean): Ajv {
  const ajv = new Ajv({ allErrors: true, coerceTypes, strict: true });
  addFormats(ajv);
  for (const file of readdirSync(schemaDir).filter((f) => f.endsWith('.schema.json'))) {
    ajv.addSchema(JSON.parse(readFileSync(path.join(schemaDir, file), 'utf8')));
  }
  return ajv;
}

const bodies = loadSchemas(false);
// Query strings arrive as text: numbers are coerced.
const queries = loadSchemas(true);

function validator(ajv: Ajv, name: string): ValidateFunction {
  const fn = ajv.getSchema(`${BASE_ID}${name}.schema.json`);
  if (!fn) throw new Error(`No schema named ${name} in ${schemaDir}`);
  return fn;
}

function describe(errors: ErrorObject[] | null | undefined): { path: string; message: string }[] {
  return (errors ?? []).map((e) => ({
    path: e.instancePath || '/',
    message:
      e.keyword === 'additionalProperties'
        ? `unknown property "${String((e.params as { additionalProperty: string }).additionalProperty)}"`
        : (e.message ?? 'is invalid'),
  }));
}

function check<T>(ajv: Ajv, name: string, value: unknown, what: string): T {
  const fn = validator(ajv, name);
  if (!fn(value)) {
    const details = describe(fn.errors);
    throw new BatonError('validation', `Invalid ${what}: ${details.map((d) => `${d.path} ${d.message}`).join('; ')}`, details);
  }
  return value as T;
}

/** Validates a JSON body against schemas/api/<name>.schema.json; throws a validation error. */
export function validateBody<T>(name: string, body: unknown): T {
  if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new BatonError('validation', 'Invalid request body: expected a JSON object');
  }
  return check<T>(bodies, name, body, 'request body');
}

/** Validates (and coerces) a query string object. */
export function validateQuery<T>(name: string, query: unknown): T {
  const value = check<Record<string, unknown>>(queries, name, { ...(query as object) }, 'query');
  // Coercion reads "1e309" as Infinity, which integer checks let through.
  const infinite = Object.entries(value).find(([, v]) => typeof v === 'number' && !Number.isFinite(v));
  if (infinite)
    throw new BatonError('validation', `Invalid query: ${infinite[0]} must be a finite number`, [
      { path: `/${infinite[0]}`, message: 'must be finite' },
    ]);
  return value as T;
}

export { isUuid };

/** Ids in paths are uuids; anything else cannot exist. */
export function requireUuid(id: string | undefined, what: string): string {
  if (!id || !isUuid(id)) throw new BatonError('not_found', `No ${what} with id "${id ?? ''}"`);
  return id;
}
