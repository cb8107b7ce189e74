// Which outgoing flows a step takes, and what a choosing gateway's history says about it
// (docs/ARCHITECTURE.md, "Execution rule"). A condition over a variable the instance does not
// have reads it as null and does not hold; the gateway then takes another flow or its default.
// Camunda 7 fails such a JUEL condition, Zeebe fails such a FEEL one only when no flow is left:
// Baton keeps FEEL's reading and says so: the decision's event names the missing variables,
// and so does the incident when no flow is left. A JavaScript condition runs as Camunda 7 runs
// it (conditions.ts): a variable it reads and the instance lacks is an error there.
import type { Plan, PlanStep } from '../compiler/plan.ts';
import type { IncidentKind } from '../model/vocabulary.ts';
import type { Variables } from '../model/effects.ts';
import { testCondition } from './conditions.ts';
import { indexPlan } from './plan-index.ts';

/** One condition a gateway tested: its flow, the condition as written in the BPMN, whether it held. */
export interface TestedCondition {
  id: string;
  condition: string;
  result: boolean;
}

/** What an exclusive or inclusive gateway tested, for its history event and its incident. */
export interface GatewayConditions {
  /** the conditions tested, in the order tested (an exclusive gateway stops at the first that holds) */
  flows: TestedCondition[];
  /** variables those conditions read that the instance does not have, first read first */
  missingVariables: string[];
}

/**
 * ok: the flows to take, and for an exclusive or inclusive gateway the data of its
 * step:completed event. Not ok: the incident to raise, with what was tested before it.
 */
export type Decision =
  | { ok: true; taken: string[]; record?: GatewayConditions & { taken: string[]; byDefault: boolean } }
  | {
      ok: false;
      kind: IncidentKind;
      message: string;
      details?: Record<string, unknown>;
      tested?: GatewayConditions;
    };

/** Which outgoing flows a step takes when it completes. */
export function decideOutgoing(plan: Plan, step: PlanStep, vars: Variables): Decision {
  if (step.kind !== 'exclusiveGateway' && step.kind !== 'inclusiveGateway') return { ok: true, taken: step.outgoing };
  const taken: string[] = [];
  const flows: TestedCondition[] = [];
  const missing = new Set<string>();
  const tested = (): GatewayConditions => ({ flows, missingVariables: [...missing] });
  for (const flowId of step.outgoing) {
    if (flowId === step.defaultFlow) continue;
    const flow = indexPlan(plan).flows.get(flowId);
    let holds = true;
    if (flow?.condition) {
      const result = testCondition(flow.condition, vars);
      if (!result.ok) {
        return {
          ok: false,
          kind: 'condition_error',
          message: `Condition of flow ${flowId} at ${step.id} failed: ${result.message}`,
          details: { flowId, condition: flow.condition.source },
          tested: tested(),
        };
      }
      holds = result.value;
      flows.push({ id: flowId, condition: flow.condition.source, result: holds });
      for (const name of result.missingVariables) missing.add(name);
    }
    if (!holds) continue;
    taken.push(flowId);
    if (step.kind === 'exclusiveGateway') break;
  }
  const byDefault = taken.length === 0 && step.defaultFlow !== undefined;
  if (byDefault) taken.push(step.defaultFlow as string);
  // After an element with conditional flows only, Camunda 7 ends the path when none holds.
  if (taken.length === 0 && step.conditionalFlowsOf !== undefined)
    return { ok: true, taken, record: { taken, byDefault, ...tested() } };
  if (taken.length === 0) {
    const { missingVariables } = tested();
    return {
      ok: false,
      kind: 'no_matching_flow',
      message:
        missingVariables.length === 0
          ? `Gateway ${step.id}: no outgoing flow condition holds and there is no default flow. Check the variables, then retry the incident.`
          : `Gateway ${step.id}: no outgoing flow condition holds and there is no default flow; the conditions read ${describeMissing(missingVariables)}, which the instance does not have (a missing variable reads as null). Retry the incident with ${missingVariables.length === 1 ? 'it' : 'them'} set, or fix the conditions.`,
      details: { outgoing: step.outgoing, ...tested() },
      tested: tested(),
    };
  }
  return { ok: true, taken, record: { taken, byDefault, ...tested() } };
}

function describeMissing(names: string[]): string {
  const quoted = names.map((n) => `"${n}"`);
  return names.length === 1 ? `variable ${quoted[0]}` : `variables ${quoted.join(', ')}`;
}
