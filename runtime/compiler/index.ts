// BPMN XML -> Plan + fingerprint, or diagnostics naming BPMN element ids.
// Pure: no I/O, never eval, and never throws for bad input.
import { buildPlan, readTaskSpecs } from './build.ts';
import { checkGraph } from './checks.ts';
import { compileConditions } from './conditions.ts';
import { errorAt, hasErrors, warningAt } from './diagnostics.ts';
import { readEventSpecs } from './events.ts';
import { allArtifacts, extractGraph } from './extract.ts';
import { fingerprintPlan } from './fingerprint.ts';
import { parseBpmn } from './parse.ts';
import { BPMN_NAMESPACE, type BpmnElement, type BpmnProcess, type BpmnSubProcess } from './model.ts';
import type { CompileOptions, CompileResult, Diagnostic, JavaTaskTopic, Plan } from './plan.ts';
import type { ProcessGraph } from './graph.ts';
import { bodyKey, bodyProcess, bodySubprocesses, checkBodyStarts, messagesInBodies } from './subprocess-bodies.ts';
import { selectProcess } from './select.ts';
import { checkSoundness } from './soundness.ts';
import { checkUnrunSettings } from './unrun-settings.ts';
import { readMultiInstances } from './multi-instance.ts';
import { findLoopScopes, nestLoops } from './loop-scopes.ts';
import { readElementLoops, readStandardLoops } from './standard-loops.ts';
import { readIoMappings } from './io-mappings.ts';
import { readScripts } from './scripts.ts';
import { readUserTasks } from './user-tasks.ts';
import { readCallActivities } from './call-activities.ts';
import { insertListeners } from './listeners.ts';
import { insertConditionalSplits } from './conditional-flows.ts';
import { readBoundaryRepeats } from './boundary-repeats.ts';

export { fingerprintPlan } from './fingerprint.ts';
export type { CompileOptions, CompileResult, Diagnostic, Plan, PlanFlow, PlanStep, TaskSpec } from './plan.ts';

/**
 * Whether the XML is a BPMN document the designer can open, as deploy would read it; a
 * draft need not compile, so nothing past the parse is checked. Never throws.
 */
export async function checkBpmnReadable(xml: string): Promise<{ ok: true } | { ok: false; message: string }> {
  const parsed = await parseBpmn(xml);
  if (parsed.ok) return { ok: true };
  return { ok: false, message: parsed.diagnostics[0]?.message ?? 'The file is not readable BPMN XML' };
}

export async function compileBpmn(xml: string, options: CompileOptions = {}): Promise<CompileResult> {
  try {
    if (typeof xml !== 'string') return failWith('The BPMN document must be XML text');
    return await compileDocument(xml, options);
  } catch (cause) {
    // A bug, not bad input: still answer with a diagnostic so a deploy never crashes.
    const message = cause instanceof Error ? cause.message : String(cause);
    return failWith(`The compiler failed on this file (${message}): please report it with the file attached`);
  }
}

/**
 * Every executable process of the file, each compiled on its own (a Camunda deployment deploys
 * them all): one result for a file with at most one, so its diagnostics are compileBpmn's.
 */
export async function compileEveryProcess(
  xml: string,
  options: Omit<CompileOptions, 'processId'> = {},
): Promise<CompileResult[]> {
  const parsed = typeof xml === 'string' ? await parseBpmn(xml) : undefined;
  const ids = parsed?.ok
    ? (parsed.document.definitions.rootElements ?? [])
        .filter((e): e is BpmnProcess => e.$type === 'bpmn:Process')
        .filter((p) => (p.flowElements ?? []).length > 0 && p.isExecutable !== false && p.id !== undefined)
        .map((p) => p.id as string)
    : [];
  if (ids.length < 2) return [await compileBpmn(xml, options)];
  return Promise.all(ids.map((processId) => compileBpmn(xml, { ...options, processId })));
}

async function compileDocument(xml: string, options: CompileOptions): Promise<CompileResult> {
  const parsed = await parseBpmn(xml);
  if (!parsed.ok) return { ok: false, diagnostics: parsed.diagnostics };
  const { document } = parsed;
  const selected = selectProcess(document.definitions, document.definitionsId, options.processId);
  if (!selected.ok) return { ok: false, diagnostics: [...parsed.diagnostics, selected.diagnostic] };
  const { process } = selected;
  const processId = process.id;
  if (!processId)
    return {
      ok: false,
      diagnostics: [errorAt(document.definitionsId, 'The process has no id: give it one, it becomes the definition key')],
    };
  const compiled = compileProcess(parsed, process, process, options);
  return compiled.ok
    ? { ...compiled, warnings: toldOnce(compiled.warnings) }
    : { ok: false, diagnostics: toldOnce(compiled.diagnostics) };
}

/** A body's checks of the file's messages repeat its process's: each diagnostic is told once. */
function toldOnce(diagnostics: Diagnostic[]): Diagnostic[] {
  const told = new Set<string>();
  return diagnostics.filter((d) => {
    const key = `${d.elementId}\n${d.message}`;
    return told.has(key) ? false : (told.add(key), true);
  });
}

/**
 * One process, or the body of one of its parallel multi-instance subprocesses (`process` then
 * stands for the subprocess, and `owner` is the process it is drawn in: the settings a process
 * gives its elements come from there). Each body compiles first: its fingerprint is part of the
 * call that runs it.
 */
function compileProcess(
  parsed: Extract<Awaited<ReturnType<typeof parseBpmn>>, { ok: true }>,
  process: BpmnProcess,
  owner: BpmnProcess,
  options: CompileOptions,
  sub?: BpmnSubProcess,
): CompileResult {
  const { document } = parsed;
  const processId = process.id as string;
  const { graph, diagnostics: extractDiagnostics } = extractGraph(process, processId, document.unresolved);
  // Before everything that reads the graph: a job listener is a step on its element's path.
  const listeners = insertListeners(graph, process);
  // So is the split after an element with conditional flows: conditions and loops see it as a gateway.
  const splits = insertConditionalSplits(graph);
  const javaTasks: JavaTaskTopic[] | undefined = options.javaTasksAsTopics ? [] : undefined;
  const tasks = readTaskSpecs(graph, document, owner, javaTasks, listeners.tasks);
  const conditions = compileConditions(graph);
  const zeebeFile = Object.values(document.definitions.$attrs ?? {}).includes(BPMN_NAMESPACE.zeebe);
  const events = readEventSpecs(graph, allArtifacts(process), zeebeFile);
  const loops = readMultiInstances(graph, [document.definitions, owner]);
  const cycles = findLoopScopes(graph);
  const repeats = readStandardLoops(graph, cycles.loops);
  const elementLoops = readElementLoops(graph, cycles.loops, loops.subprocesses);
  const io = readIoMappings(graph);
  const calls = readCallActivities(graph);
  const scripts = readScripts(graph);
  const userTasks = readUserTasks(graph, owner);
  for (const [id, wait] of userTasks.waits) events.waits.set(id, wait);
  const bodies = compileBodies(parsed, graph, owner, options);
  const diagnostics: Diagnostic[] = [
    ...(sub ? [] : parsed.diagnostics),
    ...extractDiagnostics,
    ...(sub ? checkBodyStarts(graph, sub) : []),
    ...bodies.diagnostics,
    ...listeners.diagnostics,
    ...splits,
    ...tasks.diagnostics,
    ...conditions.diagnostics,
    ...events.diagnostics,
    ...loops.diagnostics,
    ...io.diagnostics,
    ...calls.diagnostics,
    ...scripts.diagnostics,
    ...userTasks.diagnostics,
    ...checkGraph(graph, document.unresolved, sub !== undefined),
    ...cycles.diagnostics,
    ...repeats.diagnostics,
    ...elementLoops.diagnostics,
    ...checkUnrunSettings(process, document.definitions, {
      mappings: new Set([...io.runs, ...calls.mapped]),
      headers: new Set(tasks.specs.keys()),
      subscriptions: new Set([...events.subscriptions, ...messagesInBodies(graph)]),
      bodies: new Set(bodySubprocesses(graph).map((b) => b.id as string)),
      messages: sub === undefined,
    }),
  ];
  // Soundness reasons over well-formed loop bodies of supported steps only.
  if (!hasErrors(diagnostics)) diagnostics.push(...checkSoundness(graph, cycles.loops));
  if (hasErrors(diagnostics)) return { ok: false, diagnostics };
  // Loops of sequence flows and loop markers nest in one another as their bodies say.
  const allLoops = [...cycles.loops, ...repeats.loops, ...elementLoops.loops];
  nestLoops(allLoops);
  const plan = buildPlan(
    graph,
    process.name,
    tasks.specs,
    conditions.conditions,
    events,
    loops.loops,
    allLoops,
    io.io,
    calls.calls,
    scripts.scripts,
  );
  // Which non-interrupting boundaries fire again is read off the built plan: their paths' steps.
  const repeating = readBoundaryRepeats(plan);
  diagnostics.push(...repeating);
  if (hasErrors(repeating)) return { ok: false, diagnostics };
  const versionTag = sub ? undefined : versionTagOf(process);
  if (versionTag !== undefined) plan.versionTag = versionTag;
  if (sub) plan.bodyOf = { processKey: owner.id as string, elementId: sub.id as string };
  for (const step of plan.steps) {
    const body =
      step.call?.body && bodies.compiled.find((b) => b.plan.processKey === (step.call?.process as { key: string }).key);
    if (body && step.call?.body) step.call.body.fingerprint = body.fingerprint;
  }
  // Each task the option mapped is told once, where the analyst looks: the warnings.
  const mapped = (javaTasks ?? []).map((j) =>
    warningAt(
      j.elementId,
      `Task ${j.elementId} runs Java code (${j.implementation}); it is deployed as an external task on topic "${j.topic}": a worker must subscribe to that topic`,
    ),
  );
  return {
    ok: true,
    plan,
    fingerprint: fingerprintPlan(plan),
    warnings: [...diagnostics, ...mapped],
    ...(javaTasks && javaTasks.length + bodies.javaTasks.length > 0 ? { javaTasks: [...javaTasks, ...bodies.javaTasks] } : {}),
    ...(bodies.compiled.length > 0 ? { bodies: bodies.compiled } : {}),
  };
}

/** The bodies of the graph's parallel multi-instance subprocesses, with theirs; their problems, by element id. */
function compileBodies(
  parsed: Extract<Awaited<ReturnType<typeof parseBpmn>>, { ok: true }>,
  graph: ProcessGraph,
  owner: BpmnProcess,
  options: CompileOptions,
): { compiled: { plan: Plan; fingerprint: string }[]; diagnostics: Diagnostic[]; javaTasks: JavaTaskTopic[] } {
  const compiled: { plan: Plan; fingerprint: string }[] = [];
  const diagnostics: Diagnostic[] = [];
  const javaTasks: JavaTaskTopic[] = [];
  for (const sub of bodySubprocesses(graph)) {
    const result = compileProcess(parsed, bodyProcess(sub, bodyKey(graph.processId, sub.id as string)), owner, options, sub);
    if (!result.ok) {
      diagnostics.push(...result.diagnostics);
      continue;
    }
    diagnostics.push(...result.warnings);
    javaTasks.push(...(result.javaTasks ?? []));
    compiled.push({ plan: result.plan, fingerprint: result.fingerprint }, ...(result.bodies ?? []));
  }
  return { compiled, diagnostics, javaTasks };
}

/** camunda:versionTag on the process, or a Camunda 8 file's <zeebe:versionTag value>: what call activities bind to. */
function versionTagOf(process: BpmnElement): string | undefined {
  const { versionTag, extensionElements } = process as BpmnElement & {
    versionTag?: string;
    extensionElements?: { values?: (BpmnElement & { value?: string })[] };
  };
  const camunda = versionTag?.trim();
  const zeebe = (extensionElements?.values ?? []).find((v) => v.$type === 'zeebe:versionTag');
  const tag = camunda || zeebe?.value?.trim();
  return tag ? tag : undefined;
}

function failWith(message: string): CompileResult {
  return { ok: false, diagnostics: [errorAt('definitions', message)] };
}
