// Non-interrupting boundaries that fire more than once (docs/events.md, "Repeating boundaries"):
// a message, signal, timer-cycle, escalation or conditional boundary keeps waiting after it fires while its
// host runs, and each firing runs the boundary's path afresh. The path is run as a pass of the
// boundary, as a loop's body is run as a pass of the loop, so it must be the boundary's own: reached
// from it alone and ending in end events, without loops or subprocesses. A boundary whose path
// joins the rest of the process fires once per activation of its host, and deploy says so. A
// non-interrupting event subprocess runs its body once per firing the same way.
import { errorAt, warningAt } from './diagnostics.ts';
import type { Diagnostic, Plan, PlanStep } from './plan.ts';

const REPEATING = new Set(['message', 'signal', 'timer', 'escalation', 'conditional']);

/** Marks each repeatable boundary's path in `plan`; tells where a boundary fires once, or cannot run. */
export function readBoundaryRepeats(plan: Plan): Diagnostic[] {
  const steps = new Map(plan.steps.map((s) => [s.id, s]));
  const flows = new Map(plan.flows.map((f) => [f.id, f]));
  const diagnostics: Diagnostic[] = [];
  for (const boundary of plan.steps) {
    const trigger = boundary.wait?.trigger;
    if (!boundary.boundary || boundary.boundary.interrupting || !trigger || !REPEATING.has(trigger)) continue;
    // A duration or a date fires once anyway.
    if (trigger === 'timer' && boundary.wait?.trigger === 'timer' && boundary.wait.timer.kind !== 'cycle') continue;
    const path = ownPath(boundary, steps, flows);
    if ('reason' in path) {
      const what = `Non-interrupting ${trigger} boundary ${boundary.id}`;
      diagnostics.push(
        trigger === 'timer'
          ? errorAt(boundary.id, `${what} has a timeCycle, but ${path.reason}, so it could not fire more than once: ${path.fix}`)
          : warningAt(boundary.id, `${what} fires once per activation of its host: ${path.reason}. ${capital(path.fix)}`),
      );
      continue;
    }
    boundary.boundary.repeats = path;
    for (const id of path.steps) (steps.get(id) as PlanStep).inLoop = boundary.id;
  }
  for (const eventSub of plan.steps) {
    // One whose firings run in child instances of its body (subprocess-bodies.ts) runs none of them here.
    if (eventSub.eventSubProcess?.interrupting !== false || eventSub.call) continue;
    const body = ownBody(eventSub, plan, steps);
    if ('reason' in body) {
      diagnostics.push(
        errorAt(
          eventSub.id,
          `Non-interrupting event subprocess ${eventSub.id} cannot run once per firing: ${body.reason}; ${body.fix}`,
        ),
      );
      continue;
    }
    eventSub.eventSubProcess.repeats = body;
    for (const id of body.steps) if (id !== eventSub.id) (steps.get(id) as PlanStep).inLoop = eventSub.id;
  }
  return diagnostics;
}

/** What a firing of a non-interrupting event subprocess runs afresh: it, its inner steps but the start event, their flows. */
function ownBody(eventSub: PlanStep, plan: Plan, steps: Map<string, PlanStep>): OwnPath {
  const fix = 'make it interrupting, or move that work into a call activity';
  // Inside a loop, each pass of its subprocess arms it afresh: its firings are that pass's.
  const outer = eventSub.inLoop;
  const inside = (step: PlanStep): boolean => {
    for (let at = step.scope; at !== undefined; at = steps.get(at)?.scope) if (at === eventSub.id) return true;
    return false;
  };
  const body = plan.steps.filter((s) => inside(s) && s.id !== eventSub.eventSubProcess?.start);
  for (const step of body) {
    if ((step.inLoop !== undefined && step.inLoop !== outer) || step.cycle !== undefined)
      return { reason: `${step.id} in it loops`, fix };
    if (step.multiInstance && step.kind === 'subProcess')
      return { reason: `${step.id} in it is a multi-instance subprocess`, fix };
    if (step.compensation || step.throwCompensation || step.compensationHandler)
      return { reason: `${step.id} in it takes part in compensation`, fix };
    if (step.kind === 'eventSubProcess') return { reason: `it holds the event subprocess ${step.id}`, fix };
  }
  const ids = new Set([eventSub.id, ...body.map((s) => s.id), eventSub.eventSubProcess?.start ?? '']);
  const flows = plan.flows.filter((f) => ids.has(f.source)).map((f) => f.id);
  return { steps: [eventSub.id, ...body.map((s) => s.id)], flows };
}

type OwnPath = { steps: string[]; flows: string[] } | { reason: string; fix: string };

/** The steps the boundary's path reaches (their boundaries' paths too), if they are its alone. */
function ownPath(boundary: PlanStep, steps: Map<string, PlanStep>, flows: Map<string, Plan['flows'][number]>): OwnPath {
  const fix = 'end its path in end events of its own, or make it interrupting';
  // Inside a loop, each pass arms it afresh: its firings are that pass's.
  const outer = boundary.inLoop;
  const reached = new Set<string>();
  const pathFlows: string[] = [...boundary.outgoing];
  const queue = boundary.outgoing.map((f) => flows.get(f)?.target ?? '');
  while (queue.length > 0) {
    const id = queue.shift() as string;
    if (reached.has(id)) continue;
    const step = steps.get(id);
    if (!step) continue;
    if ((step.inLoop !== undefined && step.inLoop !== outer) || step.cycle !== undefined)
      return { reason: `its path reaches ${id}, which loops`, fix };
    if (step.kind === 'subProcess' || step.kind === 'eventSubProcess' || step.multiInstance)
      return {
        reason: `its path holds ${step.multiInstance ? 'the multi-instance step' : 'the subprocess'} ${id}`,
        fix: 'run that work in a call activity, or make the boundary interrupting',
      };
    if (step.compensation || step.throwCompensation) return { reason: `its path holds ${id}, which compensation reaches`, fix };
    reached.add(id);
    for (const f of step.outgoing) {
      pathFlows.push(f);
      queue.push(flows.get(f)?.target ?? '');
    }
    for (const b of step.boundaries ?? []) queue.push(b);
  }
  for (const id of reached) {
    const step = steps.get(id) as PlanStep;
    const from = step.boundary ? [step.boundary.attachedTo] : step.incoming.map((f) => flows.get(f)?.source ?? '');
    const outside = from.find((source) => source !== boundary.id && !reached.has(source));
    if (outside !== undefined) return { reason: `its path joins the flow from ${outside} at ${id}`, fix };
  }
  return { steps: [...reached], flows: [...new Set(pathFlows)] };
}

function capital(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
