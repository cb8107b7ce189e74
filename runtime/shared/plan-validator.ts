// Checks a compiled Plan against schemas/plan.schema.json before it is stored:
// a plan the engine cannot read must never reach the database.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import type { Plan } from '../compiler/plan.ts';

const schemaFile = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../schemas/plan.schema.json');
const validate = new Ajv({ allErrors: true, strict: true }).compile<Plan>(JSON.parse(readFileSync(schemaFile, 'utf8')));

/** Answers the schema errors of a plan; empty when it is valid. */
export function planSchemaErrors(plan: unknown): string[] {
  if (validate(plan)) return [];
  return (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? 'is invalid'}`);
}
