// Fingerprint: SHA-256 over the stable step protocol (docs/ARCHITECTURE.md, "The Plan"). Two plans
// with the same fingerprint have the same steps and wiring, so running
// instances can move between them; retries, priorities, topics, names,
// conditions and layout are left out on purpose.
import { createHash } from 'node:crypto';
import type { Plan } from './plan.ts';

const PROTOCOL_VERSION = 'baton-plan-fingerprint/1';

export function fingerprintPlan(plan: Plan): string {
  const steps = [...plan.steps].sort((a, b) => compareIds(a.id, b.id));
  const flows = [...plan.flows].sort((a, b) => compareIds(a.id, b.id));
  const fields = [
    PROTOCOL_VERSION,
    plan.processKey,
    `steps:${steps.length}`,
    ...steps.flatMap((step) => [step.id, step.kind]),
    `flows:${flows.length}`,
    ...flows.flatMap((flow) => [flow.id, flow.source, flow.target]),
  ];
  const hash = createHash('sha256');
  // Length prefixes make the encoding unambiguous: ("ab","c") and ("a","bc") differ.
  for (const field of fields) hash.update(`${Buffer.byteLength(field, 'utf8')}:${field}`, 'utf8');
  return hash.digest('hex');
}

/** Code-unit order, the same on every machine (localeCompare is locale dependent). */
function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
