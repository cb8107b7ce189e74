// Call activities -> CallSpec (docs/scopes.md, "Call activities"). Camunda 7 files say
// calledElement="key" with camunda:calledElementBinding and camunda:in/camunda:out: nothing
// crosses unless a mapping says so. Camunda 8 files say <zeebe:calledElement processId> with
// propagateAllParentVariables/propagateAllChildVariables (true unless set false) and
// zeebe:ioMapping. What Baton cannot run the way the file says is refused here, naming the element.
import { checkFeel, toFeel } from '../shared/feel.ts';
import { needsThread } from '../shared/feel-budget.ts';
import { errorAt } from './diagnostics.ts';
import type { ProcessGraph } from './graph.ts';
import { describeElement, type BpmnElement } from './model.ts';
import type { CallSpec, Diagnostic, IoMapping } from './plan.ts';
import { firesInBodies, readBodyCall, runsInBodies } from './subprocess-bodies.ts';

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const PATH = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/;

/** The one business-key expression Camunda 7 examples pass: the parent's own key. */
const PARENT_BUSINESS_KEY = /^[$#]\{\s*execution\.processBusinessKey\s*\}$/;

interface CallActivityElement extends BpmnElement {
  readonly calledElement?: string;
  readonly calledElementBinding?: string;
  readonly calledElementVersion?: string;
  readonly calledElementVersionTag?: string;
  readonly calledElementTenantId?: string;
  readonly variableMappingClass?: string;
  readonly variableMappingDelegateExpression?: string;
  readonly caseRef?: string;
  readonly extensionElements?: { values?: ExtensionValue[] };
}

/** A camunda:in or camunda:out, on a call activity or a signal event definition. */
export interface CamundaInOut extends BpmnElement {
  readonly source?: string;
  readonly sourceExpression?: string;
  readonly target?: string;
  readonly variables?: string;
  readonly local?: boolean;
  readonly businessKey?: string;
}

interface ExtensionValue extends CamundaInOut {
  // zeebe:calledElement (generic: attributes as read from the XML)
  readonly processId?: string;
  readonly bindingType?: string;
  readonly versionTag?: string;
  readonly propagateAllChildVariables?: string;
  readonly propagateAllParentVariables?: string;
  readonly $children?: { $type: string; source?: string; target?: string }[];
}

/** The CallSpec of every call activity, by step id; `mapped`: the ones whose zeebe:ioMapping the spec carries. */
export function readCallActivities(graph: ProcessGraph): {
  calls: Map<string, CallSpec>;
  mapped: Set<string>;
  diagnostics: Diagnostic[];
} {
  const calls = new Map<string, CallSpec>();
  const mapped = new Set<string>();
  const diagnostics: Diagnostic[] = [];
  for (const node of graph.nodes.values()) {
    if (node.kind === 'eventSubProcess' && firesInBodies(node.element))
      calls.set(node.id, readBodyCall(graph.processId, node.id));
    if (node.kind !== 'callActivity') continue;
    const element = node.element as CallActivityElement;
    const problems: string[] = [];
    const values = element.extensionElements?.values ?? [];
    const zeebe = values.find((v) => v.$type === 'zeebe:calledElement');
    const spec = runsInBodies(element)
      ? readBodyCall(graph.processId, node.id)
      : zeebe
        ? readZeebe(zeebe, values, problems)
        : readCamunda(element, values, problems);
    if (problems.length > 0) {
      const what = runsInBodies(element) ? 'Multi-instance subprocess' : 'Call activity';
      diagnostics.push(errorAt(node.id, `${what} ${describeElement(element)}: ${problems.join('; ')}`));
      continue;
    }
    if (spec) calls.set(node.id, spec);
    if (zeebe && values.some((v) => v.$type === 'zeebe:ioMapping')) mapped.add(node.id);
  }
  return { calls, mapped, diagnostics };
}

function readCamunda(element: CallActivityElement, values: ExtensionValue[], problems: string[]): CallSpec | undefined {
  if (element.caseRef) problems.push('calling a CMMN case (camunda:caseRef) is not supported: call a BPMN process');
  if (element.variableMappingClass || element.variableMappingDelegateExpression)
    problems.push('a variable mapping delegate is Java code, which Baton does not run: use camunda:in and camunda:out');
  if (element.calledElementTenantId) problems.push('camunda:calledElementTenantId is not supported: Baton has no tenants');
  const process = readProcess(element.calledElement, 'calledElement', problems);
  const binding = element.calledElementBinding ?? 'latest';
  let version: number | undefined;
  let versionTag: string | undefined;
  if (binding === 'version') {
    version = Number(element.calledElementVersion);
    if (!Number.isInteger(version) || version < 1) {
      problems.push(`camunda:calledElementVersion "${element.calledElementVersion ?? ''}" is not a version number`);
    }
  } else if (binding === 'versionTag') {
    versionTag = readVersionTag(element.calledElementVersionTag, 'camunda:calledElementVersionTag', problems);
  } else if (binding !== 'latest' && binding !== 'deployment') {
    problems.push(
      `camunda:calledElementBinding "${binding}" is not supported: use latest (the newest version), deployment (the version deployed with the caller), version with camunda:calledElementVersion, or versionTag with camunda:calledElementVersionTag`,
    );
  }
  const spec: CallSpec = {
    process: process ?? { key: '?' },
    binding: binding === 'version' || binding === 'versionTag' || binding === 'deployment' ? binding : 'latest',
    ...(version !== undefined ? { version } : {}),
    ...(versionTag !== undefined ? { versionTag } : {}),
    inAll: false,
    inputs: [],
    outAll: false,
    outputs: [],
    businessKey: false,
  };
  for (const value of values) {
    if (value.$type !== 'camunda:In' && value.$type !== 'camunda:Out') continue;
    const direction = value.$type === 'camunda:In' ? 'in' : 'out';
    const what = `camunda:${direction}`;
    if (value.businessKey !== undefined) {
      if (direction === 'in' && PARENT_BUSINESS_KEY.test(value.businessKey.trim())) spec.businessKey = true;
      else
        problems.push(
          `${what} businessKey="${value.businessKey}" is not supported: Baton passes the parent's own key (#{execution.processBusinessKey})`,
        );
      continue;
    }
    if (direction === 'out' && value.local)
      problems.push(`${what} local="true" is not supported: an output goes to the process variables`);
    if (direction === 'in' && value.local)
      problems.push(
        `${what} local="true" passes the call activity's own input parameters, which Baton does not run on a call activity: name the variables with source and target, or pass them all without local`,
      );
    if (value.variables === 'all') {
      if (direction === 'in') spec.inAll = true;
      else spec.outAll = true;
      continue;
    }
    const mapping = readCamundaMapping(value, what, problems);
    if (mapping) (direction === 'in' ? spec.inputs : spec.outputs).push(mapping);
  }
  return process ? spec : undefined;
}

/** One camunda:in or camunda:out with a source or sourceExpression (signal throws read theirs with it too). */
export function readCamundaMapping(
  value: Pick<ExtensionValue, 'source' | 'sourceExpression' | 'target'>,
  what: string,
  problems: string[],
): IoMapping | undefined {
  const target = value.target?.trim() ?? '';
  if (!NAME.test(target)) {
    problems.push(`${what} target "${target}" is not a variable name`);
    return undefined;
  }
  if (value.sourceExpression !== undefined) {
    const feel = toFeel(value.sourceExpression);
    if (!feel.ok) {
      problems.push(`${what} sourceExpression "${value.sourceExpression}" cannot be used: ${feel.message}`);
      return undefined;
    }
    return checked({ target, feel: feel.feel, source: value.sourceExpression }, what, problems);
  }
  const source = value.source?.trim() ?? '';
  if (!NAME.test(source)) {
    problems.push(`${what} source "${source}" is not a variable name: name a variable, or use sourceExpression`);
    return undefined;
  }
  return { target, feel: source, source };
}

function readZeebe(called: ExtensionValue, values: ExtensionValue[], problems: string[]): CallSpec | undefined {
  const process = readProcess(called.processId, 'zeebe:calledElement processId', problems);
  const binding = called.bindingType ?? 'latest';
  const versionTag =
    binding === 'versionTag' ? readVersionTag(called.versionTag, 'zeebe:calledElement versionTag', problems) : undefined;
  if (binding !== 'latest' && binding !== 'versionTag' && binding !== 'deployment')
    problems.push(
      `bindingType "${binding}" is not supported: use latest (the newest version), deployment (the version deployed with the caller) or versionTag with versionTag`,
    );
  const spec: CallSpec = {
    process: process ?? { key: '?' },
    binding: versionTag !== undefined ? 'versionTag' : binding === 'deployment' ? 'deployment' : 'latest',
    ...(versionTag !== undefined ? { versionTag } : {}),
    inAll: called.propagateAllParentVariables !== 'false',
    inputs: [],
    outAll: called.propagateAllChildVariables !== 'false',
    outputs: [],
    businessKey: false,
  };
  for (const holder of values.filter((v) => v.$type === 'zeebe:ioMapping')) {
    for (const child of holder.$children ?? []) {
      const direction = child.$type === 'zeebe:input' ? 'input' : child.$type === 'zeebe:output' ? 'output' : undefined;
      if (!direction) continue;
      const mapping = readZeebeMapping(child, `zeebe:${direction}`, problems);
      if (mapping) (direction === 'input' ? spec.inputs : spec.outputs).push(mapping);
    }
  }
  // Output mappings say exactly what comes back (Zeebe's rule).
  if (spec.outputs.length > 0) spec.outAll = false;
  return process ? spec : undefined;
}

function readZeebeMapping(
  mapping: { source?: string; target?: string },
  what: string,
  problems: string[],
): IoMapping | undefined {
  const target = mapping.target?.trim() ?? '';
  const source = mapping.source ?? '';
  if (!PATH.test(target)) {
    problems.push(`${what} target "${target}" is not a variable name or a dotted path such as order.total`);
    return undefined;
  }
  if (!source.trim().startsWith('=')) return { target, feel: JSON.stringify(source), source };
  const feel = toFeel(source);
  if (!feel.ok) {
    problems.push(`${what} to "${target}": source "${source}" cannot be used: ${feel.message}`);
    return undefined;
  }
  return checked({ target, feel: feel.feel, source }, what, problems);
}

/** A literal process id, or an expression (`=...` FEEL, `${...}`) evaluated when the step starts. */
function readProcess(text: string | undefined, what: string, problems: string[]): CallSpec['process'] | undefined {
  const trimmed = text?.trim() ?? '';
  if (trimmed === '') {
    problems.push(`${what} is empty: name the process to call (its id)`);
    return undefined;
  }
  if (!trimmed.startsWith('=') && !/[$#]\{/.test(trimmed)) return { key: trimmed };
  const feel = toFeel(trimmed);
  if (!feel.ok) {
    problems.push(`${what} "${trimmed}" cannot be used: ${feel.message}`);
    return undefined;
  }
  return { feel: feel.feel, source: trimmed };
}

function checked(mapping: IoMapping, what: string, problems: string[]): IoMapping | undefined {
  if (needsThread(mapping.feel)) {
    problems.push(`${what} to ${mapping.target} "${mapping.source}" iterates (for, some, every): compute the value in a worker`);
    return undefined;
  }
  const error = checkFeel(mapping.feel);
  if (error === undefined) return mapping;
  problems.push(`${what} to ${mapping.target} "${mapping.source}": ${error}`);
  return undefined;
}

/** A version tag to bind to: literal text (an expression would be evaluated per call, which Baton does not do). */
function readVersionTag(source: string | undefined, what: string, problems: string[]): string | undefined {
  const text = source?.trim() ?? '';
  if (text === '') {
    problems.push(`${what} is empty: name the version tag of the called process`);
    return undefined;
  }
  if (/^(=|\$\{|#\{)/.test(text)) {
    problems.push(`${what} "${text}" is an expression: give the tag itself`);
    return undefined;
  }
  return text;
}
