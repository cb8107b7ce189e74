// A user task's attributes, evaluated once when the task is created (as both Camunda engines do),
// and a completion's variables checked against its form.
import type { FormFieldSpec, UserTaskSpec, UserTaskValue } from '../compiler/plan.ts';
import type { UserTaskDetails, Variables } from '../model/effects.ts';
import { evaluateJson } from '../shared/feel.ts';
import { isIsoDuration } from '../shared/timers.ts';
import { runJavaScript } from './script-sandbox.ts';

type Result<T> = { ok: true; details: T } | { ok: false; message: string };

const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$/;

export function evaluateUserTask(spec: UserTaskSpec, vars: Variables, now = new Date()): Result<UserTaskDetails> {
  try {
    const assignee = valueOf(spec.assignee, vars, 'assignee');
    if (assignee !== null && typeof assignee !== 'string')
      throw new Error(`assignee gave ${typeName(assignee)}, not a user name`);
    const priority = valueOf(spec.priority, vars, 'priority') ?? 50;
    const number = typeof priority === 'string' ? Number(priority) : priority;
    if (typeof number !== 'number' || !Number.isInteger(number) || number < 0 || number > 100)
      throw new Error(`priority gave ${JSON.stringify(priority)}, not a whole number from 0 to 100`);
    return {
      ok: true,
      details: {
        assignee: assignee === '' ? null : assignee,
        candidateUsers: namesOf(valueOf(spec.candidateUsers, vars, 'candidateUsers'), 'candidateUsers'),
        candidateGroups: namesOf(valueOf(spec.candidateGroups, vars, 'candidateGroups'), 'candidateGroups'),
        dueAt: dateOf(valueOf(spec.dueDate, vars, 'dueDate'), 'dueDate', now),
        followUpAt: dateOf(valueOf(spec.followUpDate, vars, 'followUpDate'), 'followUpDate', now),
        priority: number,
      },
    };
  } catch (err) {
    return { ok: false, message: (err as Error).message };
  }
}

function valueOf(value: UserTaskValue | undefined, vars: Variables, what: string): unknown {
  if (value === undefined) return null;
  if ('text' in value) return value.text;
  const result = evaluateJson(value.feel, vars);
  if (!result.ok) throw new Error(`${what} ${result.message}`);
  return result.value;
}

/** A list of names, or text with names separated by commas (Camunda 7's form). */
function namesOf(value: unknown, what: string): string[] {
  if (value === null) return [];
  const items = typeof value === 'string' ? value.split(',') : Array.isArray(value) ? value : undefined;
  if (!items || items.some((i) => typeof i !== 'string'))
    throw new Error(`${what} gave ${typeName(value)}: give a list of names or comma-separated text`);
  return [...new Set((items as string[]).map((i) => i.trim()).filter((i) => i !== ''))];
}

/** An ISO date-time, or an ISO duration from now (Camunda 7 allows both). */
function dateOf(value: unknown, what: string, now: Date): string | null {
  if (value === null || value === '') return null;
  if (typeof value === 'string' && isIsoDuration(value)) return addDuration(now, value).toISOString();
  if (typeof value === 'string' && DATE_TIME.test(value) && !Number.isNaN(Date.parse(value)))
    return new Date(Date.parse(value)).toISOString();
  throw new Error(`${what} gave ${JSON.stringify(value)}: give an ISO 8601 date-time (2026-12-24T17:00:00Z) or duration (P2D)`);
}

function addDuration(from: Date, duration: string): Date {
  const m = /^P(?:(\d+)Y)?(?:(\d+)M)?(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$/.exec(duration)!;
  const n = (i: number) => Number(m[i] ?? 0);
  const at = new Date(from);
  at.setUTCFullYear(at.getUTCFullYear() + n(1), at.getUTCMonth() + n(2), at.getUTCDate() + 7 * n(3) + n(4));
  return new Date(at.getTime() + ((n(5) * 60 + n(6)) * 60 + n(7)) * 1000);
}

function typeName(value: unknown): string {
  return value === null
    ? 'null'
    : Array.isArray(value)
      ? 'a list'
      : typeof value === 'object'
        ? 'a context'
        : `${typeof value} ${JSON.stringify(value)}`;
}

/** One field the completion got wrong: its id and what to fix. */
export interface FormProblem {
  field: string;
  message: string;
}

/**
 * Checks a completion's variables against camunda:formData (types, enum values, constraints)
 * and an embedded Camunda Form's `validate` rules. A field not given keeps its old value (or its
 * default): `required` then asks for a value the instance does not have yet.
 */
export function checkForm(spec: UserTaskSpec, submitted: Variables, current: Variables): FormProblem[] {
  const problems: FormProblem[] = [];
  for (const field of spec.formFields ?? []) problems.push(...checkField(field, submitted, current));
  for (const component of formComponents(spec.formSchema)) problems.push(...checkComponent(component, submitted, current));
  return problems;
}

function checkField(field: FormFieldSpec, submitted: Variables, current: Variables): FormProblem[] {
  const given = Object.hasOwn(submitted, field.id);
  const value = given ? submitted[field.id] : (current[field.id] ?? field.defaultValue);
  const rules = new Map(field.constraints.map((c) => [c.name, c.config]));
  const wrong = (message: string): FormProblem[] => [{ field: field.id, message: `${field.label ?? field.id}: ${message}` }];
  if (rules.has('readonly') && given && submitted[field.id] !== current[field.id]) return wrong('is read-only');
  if (value === undefined || value === null || value === '') return rules.has('required') ? wrong('is required') : [];
  switch (field.type) {
    case 'long':
      if (typeof value !== 'number' || !Number.isInteger(value))
        return wrong(`must be a whole number, got ${JSON.stringify(value)}`);
      break;
    case 'boolean':
      if (typeof value !== 'boolean') return wrong(`must be true or false, got ${JSON.stringify(value)}`);
      break;
    case 'enum':
      if (!(field.values ?? []).some((v) => v.id === value))
        return wrong(`must be one of ${(field.values ?? []).map((v) => v.id).join(', ')}, got ${JSON.stringify(value)}`);
      break;
    case 'date':
    case 'string':
      if (typeof value !== 'string') return wrong(`must be text, got ${JSON.stringify(value)}`);
      break;
  }
  const limit = (name: string) => Number(rules.get(name as FormFieldSpec['constraints'][number]['name']));
  if (typeof value === 'string' && rules.has('minlength') && value.length < limit('minlength'))
    return wrong(`must have at least ${limit('minlength')} characters`);
  if (typeof value === 'string' && rules.has('maxlength') && value.length > limit('maxlength'))
    return wrong(`must have at most ${limit('maxlength')} characters`);
  if (typeof value === 'number' && rules.has('min') && value < limit('min')) return wrong(`must be at least ${limit('min')}`);
  if (typeof value === 'number' && rules.has('max') && value > limit('max')) return wrong(`must be at most ${limit('max')}`);
  return [];
}

interface FormComponent {
  key?: string;
  label?: string;
  type?: string;
  validate?: { required?: boolean; min?: number; max?: number; minLength?: number; maxLength?: number; pattern?: string };
  values?: { value: unknown }[];
  components?: FormComponent[];
}

/** The input components of a form-js schema, groups opened. */
function formComponents(schema: unknown): FormComponent[] {
  const out: FormComponent[] = [];
  const walk = (list: unknown) => {
    if (!Array.isArray(list)) return;
    for (const c of list as FormComponent[]) {
      if (c && typeof c === 'object') {
        if (typeof c.key === 'string') out.push(c);
        walk(c.components);
      }
    }
  };
  walk((schema as { components?: unknown } | undefined)?.components);
  return out;
}

function checkComponent(c: FormComponent, submitted: Variables, current: Variables): FormProblem[] {
  const key = c.key!;
  const value = Object.hasOwn(submitted, key) ? submitted[key] : current[key];
  const rules = c.validate ?? {};
  const wrong = (message: string): FormProblem[] => [{ field: key, message: `${c.label ?? key}: ${message}` }];
  if (value === undefined || value === null || value === '') return rules.required ? wrong('is required') : [];
  if (c.type === 'number' && typeof value !== 'number') return wrong(`must be a number, got ${JSON.stringify(value)}`);
  if (c.type === 'checkbox' && typeof value !== 'boolean') return wrong(`must be true or false, got ${JSON.stringify(value)}`);
  if ((c.type === 'select' || c.type === 'radio') && Array.isArray(c.values) && !c.values.some((v) => v.value === value))
    return wrong(`must be one of ${c.values.map((v) => JSON.stringify(v.value)).join(', ')}, got ${JSON.stringify(value)}`);
  if (typeof value === 'number' && rules.min !== undefined && value < rules.min) return wrong(`must be at least ${rules.min}`);
  if (typeof value === 'number' && rules.max !== undefined && value > rules.max) return wrong(`must be at most ${rules.max}`);
  if (typeof value === 'string') {
    if (rules.minLength !== undefined && value.length < rules.minLength)
      return wrong(`must have at least ${rules.minLength} characters`);
    if (rules.maxLength !== undefined && value.length > rules.maxLength)
      return wrong(`must have at most ${rules.maxLength} characters`);
    if (rules.pattern !== undefined && !matchesPattern(rules.pattern, value)) return wrong(`must match ${rules.pattern}`);
  }
  return [];
}

// form-js patterns are JavaScript regular expressions written by the analyst, tested as form-js
// tests them in the browser (found anywhere in the text), so that both answer alike. A pattern
// can backtrack for ages on a crafted value, so it runs in the script sandbox under the scripts'
// time budget rather than on the server's thread; one that does not compile or does not finish
// in time fails the field rather than the request.
function matchesPattern(pattern: string, value: string): boolean {
  if (value.length > 10_000) return false;
  const run = runJavaScript('new RegExp(__pattern).test(__value)', { __pattern: pattern, __value: value });
  return run.ok && run.value === true;
}
