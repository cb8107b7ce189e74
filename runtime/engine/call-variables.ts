// Which variables cross a call activity (docs/scopes.md, "Call activities"): what the child
// starts with, and what its end writes back to the parent. Pure: advance.ts and call-returns.ts
// write what these return.
import type { CallSpec, IoMapping, PlanStep } from '../compiler/plan.ts';
import type { Variables } from '../model/effects.ts';
import { evaluateKey } from '../shared/feel.ts';
import { assignPath, type MappingFailure } from './io-mappings.ts';
import { evaluateValue } from './loops.ts';

export type CallStart = { ok: true; key: string; variables: Variables } | MappingFailure;

/** Which version of the called process a call starts: the one it pins, or (empty) the newest. */
export function pinOf(call: CallSpec): { version?: number; versionTag?: string; sameDeployment?: boolean } {
  if (call.binding === 'version' && call.version !== undefined) return { version: call.version };
  if (call.binding === 'versionTag' && call.versionTag !== undefined) return { versionTag: call.versionTag };
  if (call.binding === 'deployment') return { sameDeployment: true };
  return {};
}

/** The called key and the child's variables: everything visible (inAll), then each input in order over the parent's variables. */
export function prepareCall(step: PlanStep, vars: Variables): CallStart {
  const call = step.call!;
  let key: string;
  if ('key' in call.process) key = call.process.key;
  else {
    const evaluated = evaluateKey(call.process.feel, vars);
    if (!evaluated.ok)
      return {
        ok: false,
        message: `The called process of ${step.id} ("${call.process.source}"): ${evaluated.message}. Fix the variables, then retry the incident.`,
        details: { calledElement: call.process.source },
      };
    key = evaluated.value;
  }
  const variables: Variables = call.inAll ? { ...vars } : {};
  const failed = applyMappings(step, call.inputs, vars, variables, 'Input', 'Fix the variables, then retry the incident');
  return failed ?? { ok: true, key, variables };
}

export type CallReturn = { ok: true; variables: Variables } | MappingFailure;

/** What the ended child writes to the parent: all of its variables (outAll), then each output over the child's variables. */
export function returnedVariables(step: PlanStep, parentVars: Variables, childVars: Variables, next: string): CallReturn {
  const call = step.call!;
  const out: Variables = call.outAll ? { ...childVars } : {};
  const failed = applyMappings(step, call.outputs, childVars, out, 'Output', next, parentVars);
  return failed ?? { ok: true, variables: out };
}

function applyMappings(
  step: PlanStep,
  mappings: IoMapping[],
  scope: Variables,
  into: Variables,
  kind: 'Input' | 'Output',
  next: string,
  from: Variables = scope,
): MappingFailure | undefined {
  for (const mapping of mappings) {
    const value = evaluateValue(mapping.feel, scope);
    if (!value.ok)
      return {
        ok: false,
        message: `${kind} mapping of call activity ${step.id} to ${mapping.target} ("${mapping.source}") failed: ${value.message}. ${next}.`,
        details: { mapping: { direction: kind.toLowerCase(), target: mapping.target, source: mapping.source } },
      };
    assignPath(into, mapping.target, value.value, from);
  }
  return undefined;
}
