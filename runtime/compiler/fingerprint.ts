// Fingerprint: SHA-256 over the stable step protocol (docs/ARCHITECTURE.md, "The Plan"). Two plans
// with the same fingerprint have the same steps and wiring, so running
// instances can move between them; retries, priorities, topics, names,
// conditions and layout are left out on purpose. A service task's input/output mappings are
// covered (ioFields).
import { createHash } from 'node:crypto';
import type { IoMapping, Plan, PlanStep, ScriptMapping } from './plan.ts';

const PROTOCOL_VERSION = 'baton-plan-fingerprint/1';

export function fingerprintPlan(plan: Plan): string {
  const steps = [...plan.steps].sort((a, b) => compareIds(a.id, b.id));
  const flows = [...plan.flows].sort((a, b) => compareIds(a.id, b.id));
  const fields = [
    PROTOCOL_VERSION,
    plan.processKey,
    `steps:${steps.length}`,
    ...steps.flatMap((step) => [step.id, step.kind, ...ioFields(step), ...bodyFields(step)]),
    `flows:${flows.length}`,
    ...flows.flatMap((flow) => [flow.id, flow.source, flow.target]),
  ];
  const hash = createHash('sha256');
  // Length prefixes make the encoding unambiguous: ("ab","c") and ("a","bc") differ.
  for (const field of fields) hash.update(`${Buffer.byteLength(field, 'utf8')}:${field}`, 'utf8');
  return hash.digest('hex');
}

/**
 * A step's input/output mappings: they decide which variables its worker sees and what its
 * result writes, so an instance cannot move between plans that map differently. Only steps
 * with mappings add fields, so every plan without them keeps its fingerprint.
 */
function ioFields(step: PlanStep): string[] {
  if (!step.io) return [];
  const pairs = (list: (IoMapping | ScriptMapping)[]) =>
    list.map((m) => ('feel' in m ? [m.target, m.feel] : [m.target, { javascript: m.javascript }]));
  return ['io', JSON.stringify({ inputs: pairs(step.io.inputs), outputs: pairs(step.io.outputs) })];
}

/** A parallel subprocess's body is part of its process: its fingerprint covers the body's steps and wiring. */
function bodyFields(step: PlanStep): string[] {
  return step.call?.body ? ['body', step.call.body.fingerprint] : [];
}

/** Code-unit order, the same on every machine (localeCompare is locale dependent). */
function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
