// ProcessGraph (checked) -> Plan, the JSON document the engine runs.
import type { ProcessGraph } from './graph.ts';
import type { BpmnElement } from './model.ts';
import type { ParsedDocument } from './parse.ts';
import type {
  CallSpec,
  Diagnostic,
  FlowCondition,
  ScriptCondition,
  IoSpec,
  JavaTaskTopic,
  MultiInstanceSpec,
  Plan,
  PlanFlow,
  PlanStep,
  RepeatSpec,
  ScriptSpec,
  TaskSpec,
} from './plan.ts';
import { subProcessStarts } from './checks.ts';
import type { EventSpecs } from './events.ts';
import { readTaskSpec } from './task-spec.ts';
import type { LoopScope } from './loop-scopes.ts';

export interface TaskSpecsResult {
  specs: Map<string, TaskSpec>;
  diagnostics: Diagnostic[];
}

export function readTaskSpecs(
  graph: ProcessGraph,
  document: ParsedDocument,
  process: BpmnElement,
  javaTopics?: JavaTaskTopic[],
  /** tasks the compiler drew itself (execution listeners): taken as they are */
  drawn: ReadonlyMap<string, TaskSpec> = new Map(),
): TaskSpecsResult {
  const specs = new Map<string, TaskSpec>(drawn);
  const diagnostics: Diagnostic[] = [];
  for (const node of graph.nodes.values()) {
    if (node.kind !== 'serviceTask' || drawn.has(node.id)) continue;
    const zeebe = document.zeebeTasks.get(node.id);
    const result = readTaskSpec(node.element, {
      ...(zeebe ? { zeebe } : {}),
      scopes: [document.definitions, process],
      ...(javaTopics ? { javaTopics } : {}),
    });
    if (result.ok) specs.set(node.id, result.task);
    else diagnostics.push(...result.diagnostics);
  }
  return { specs, diagnostics };
}

export function buildPlan(
  graph: ProcessGraph,
  processName: string | undefined,
  specs: Map<string, TaskSpec>,
  conditions: Map<string, FlowCondition | ScriptCondition>,
  events: EventSpecs,
  loops: Map<string, MultiInstanceSpec> = new Map(),
  cycles: readonly LoopScope[] = [],
  io: Map<string, IoSpec> = new Map(),
  calls: Map<string, CallSpec> = new Map(),
  scripts: Map<string, ScriptSpec> = new Map(),
): Plan {
  const steps: PlanStep[] = [];
  const starts = subProcessStarts(graph);
  // The innermost loop of a step is the smallest body that holds it.
  const bySize = [...cycles].sort((a, b) => a.steps.length - b.steps.length);
  const inLoop = (id: string) => bySize.find((l) => l.steps.includes(id))?.id;
  for (const node of graph.nodes.values()) {
    if (node.kind === undefined) continue; // never reached: unsupported nodes fail the compile
    const task = specs.get(node.id);
    const defaultFlow = node.element.default?.id;
    const choosing = node.kind === 'exclusiveGateway' || node.kind === 'inclusiveGateway';
    steps.push({
      id: node.id,
      kind: node.kind,
      ...(node.element.$type === 'bpmn:ReceiveTask' || node.element.$type === 'bpmn:UserTask'
        ? { elementType: node.element.$type as 'bpmn:ReceiveTask' | 'bpmn:UserTask' }
        : {}),
      ...nameOf(node.element.name),
      incoming: [...node.incoming],
      outgoing: [...node.outgoing],
      ...(task ? { task: { ...task } } : {}),
      ...(choosing && defaultFlow !== undefined ? { defaultFlow } : {}),
      ...eventFields(node.id, events),
      ...(node.scope !== undefined ? { scope: node.scope } : {}),
      ...(node.kind === 'subProcess' ? { subProcess: { start: starts.get(node.id) ?? '' } } : {}),
      ...(node.kind === 'eventSubProcess' ? { eventSubProcess: eventSubProcessOf(graph, node.id) } : {}),
      ...(node.kind === 'errorEndEvent' ? { throwError: { ...events.errors.get(node.id) } } : {}),
      ...(events.signals.has(node.id) ? { throwSignal: structuredClone(events.signals.get(node.id)!) } : {}),
      ...(events.escalations.has(node.id) ? { throwEscalation: { ...events.escalations.get(node.id)! } } : {}),
      ...(loops.has(node.id) ? { multiInstance: structuredClone(loops.get(node.id)!) } : {}),
      ...(io.has(node.id) ? { io: structuredClone(io.get(node.id)!) } : {}),
      ...(calls.has(node.id) ? { call: structuredClone(calls.get(node.id)!) } : {}),
      ...(scripts.has(node.id) ? { script: { ...scripts.get(node.id)! } } : {}),
      ...optional('inLoop', inLoop(node.id)),
      ...optional('conditionalFlowsOf', node.splitOf),
    });
  }
  for (const loop of cycles) {
    const head = graph.nodes.get(loop.head);
    steps.push({
      id: loop.id,
      kind: 'loop',
      incoming: [],
      outgoing: [],
      ...(head?.scope !== undefined ? { scope: head.scope } : {}),
      ...optional('inLoop', loop.parent),
      cycle: {
        head: loop.head,
        steps: [...loop.steps],
        backFlows: [...loop.backFlows],
        exitFlows: [...loop.exitFlows],
        ...('repeat' in loop ? { repeat: structuredClone(loop.repeat as RepeatSpec) } : {}),
      },
    });
  }
  const flows: PlanFlow[] = graph.flows.map((flow) => {
    const condition = conditions.get(flow.id);
    return {
      id: flow.id,
      ...nameOf(flow.element.name),
      source: flow.source,
      target: flow.target,
      ...(condition ? { condition: { ...condition } } : {}),
    };
  });
  return { processKey: graph.processId, ...nameOf(processName), steps, flows };
}

function eventSubProcessOf(graph: ProcessGraph, eventSubProcess: string): { start: string; interrupting?: false } {
  const start = [...graph.nodes.values()].find((n) => n.scope === eventSubProcess && n.kind === 'eventSubProcessStart');
  const interrupting = (start?.element as { isInterrupting?: boolean } | undefined)?.isInterrupting !== false;
  return { start: start?.id ?? '', ...(interrupting ? {} : { interrupting: false as const }) };
}

function eventFields(
  id: string,
  events: EventSpecs,
): Pick<PlanStep, 'wait' | 'boundary' | 'boundaries' | 'compensation' | 'compensationHandler' | 'throwCompensation'> {
  const wait = events.waits.get(id);
  const boundary = events.boundaries.get(id);
  const boundaries = events.attached.get(id);
  const handler = events.compensations.get(id);
  const isHandler = [...events.compensations.values()].includes(id);
  const thrown = events.throws.get(id);
  return {
    ...(wait ? { wait: structuredClone(wait) } : {}),
    ...(boundary ? { boundary: { ...boundary } } : {}),
    ...(boundaries ? { boundaries: [...boundaries] } : {}),
    ...(handler ? { compensation: { handler } } : {}),
    ...(isHandler ? { compensationHandler: true } : {}),
    ...(thrown ? { throwCompensation: { ...thrown } } : {}),
  };
}

function optional<K extends string>(key: K, value: string | undefined): { [P in K]?: string } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: string };
}

/** Names are optional in BPMN; an empty one is left out rather than stored as "". */
function nameOf(name: string | undefined): { name?: string } {
  const trimmed = name?.trim();
  return trimmed ? { name: trimmed } : {};
}
