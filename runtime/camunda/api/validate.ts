// ajv validators for schemas/camunda. Camunda ignores unknown properties, so these
// schemas never set additionalProperties: false.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv, type ErrorObject } from 'ajv';
import addFormatsPlugin from 'ajv-formats';
import { invalidRequest } from './errors.ts';

const schemaDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../schemas/camunda');
const BASE_ID = 'https://baton.dev/schemas/camunda/';

// ajv-formats ships CommonJS; its default export is the plugin function.
const addFormats = addFormatsPlugin as unknown as (ajv: Ajv) => Ajv;

const ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true });
// The answer schemas in the same folder name formats (uuid): every file there must compile here.
addFormats(ajv);
for (const file of readdirSync(schemaDir).filter((f) => f.endsWith('.schema.json'))) {
  ajv.addSchema(JSON.parse(readFileSync(path.join(schemaDir, file), 'utf8')));
}

function describe(errors: ErrorObject[] | null | undefined): string {
  return (errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? 'is invalid'}`).join('; ');
}

/** Validates a JSON body against schemas/camunda/<name>.schema.json; throws InvalidRequestException. */
export function validateCamundaBody<T>(name: string, body: unknown): T {
  if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw invalidRequest('The request body must be a JSON object');
  }
  const fn = ajv.getSchema(`${BASE_ID}${name}.schema.json`);
  if (!fn) throw new Error(`No schema named ${name} in ${schemaDir}`);
  if (!fn(body)) throw invalidRequest(`Invalid request body: ${describe(fn.errors)}`);
  return body as T;
}
