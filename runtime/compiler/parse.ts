// XML -> moddle element tree. Camunda 7 attributes (camunda:type, camunda:topic,
// camunda:taskPriority) come from the camunda descriptors; Camunda 8 task
// definitions need the zeebe descriptors, which cannot share a moddle instance
// with camunda's, so files that declare the zeebe namespace are read twice.
import { BpmnModdle, type ModdleWarning, type ParseResult } from 'bpmn-moddle';
import camundaPackage from 'camunda-bpmn-moddle/resources/camunda.json' with { type: 'json' };
import zeebePackage from 'zeebe-bpmn-moddle/resources/zeebe.json' with { type: 'json' };
import { errorAt, warningAt } from './diagnostics.ts';
import { BPMN_NAMESPACE, type BpmnDefinitions, type ZeebeTaskDefinition } from './model.ts';
import type { Diagnostic } from './plan.ts';

/** A reference moddle could not resolve, e.g. a sequence flow's targetRef naming a missing id. */
export interface UnresolvedReference {
  elementId: string;
  /** e.g. "bpmn:targetRef", "bpmn:default" */
  property: string;
  reference: string;
}

export interface ParsedDocument {
  definitions: BpmnDefinitions;
  /** the definitions id, or "definitions" when the file gives none */
  definitionsId: string;
  unresolved: UnresolvedReference[];
  /** zeebe:taskDefinition by flow node id */
  zeebeTasks: Map<string, ZeebeTaskDefinition>;
}

export type ParseOutcome =
  { ok: true; document: ParsedDocument; diagnostics: Diagnostic[] } | { ok: false; diagnostics: Diagnostic[] };

const DEFINITIONS = 'definitions';
let camundaModdle: BpmnModdle | undefined;
let zeebeModdle: BpmnModdle | undefined;

export async function parseBpmn(xml: string): Promise<ParseOutcome> {
  // A DOCTYPE can declare entities (billion laughs, external files); BPMN never needs one.
  if (/<!DOCTYPE/i.test(xml)) {
    return {
      ok: false,
      diagnostics: [errorAt(DEFINITIONS, 'DOCTYPE declarations are not allowed: remove the <!DOCTYPE ...> line from the file')],
    };
  }
  camundaModdle ??= new BpmnModdle({ camunda: camundaPackage });
  let result: ParseResult;
  try {
    result = await camundaModdle.fromXML(xml);
  } catch (cause) {
    return { ok: false, diagnostics: [errorAt(DEFINITIONS, describeParseFailure(cause))] };
  }
  const definitions = result.rootElement as BpmnDefinitions;
  const definitionsId = definitions.id ?? DEFINITIONS;
  const { diagnostics, unresolved } = readWarnings(result.warnings, xml, definitionsId);
  const zeebeTasks = xml.includes(BPMN_NAMESPACE.zeebe) ? await readZeebeTasks(xml) : new Map<string, ZeebeTaskDefinition>();
  return { ok: true, document: { definitions, definitionsId, unresolved, zeebeTasks }, diagnostics };
}

function describeParseFailure(cause: unknown): string {
  const error = cause instanceof Error ? cause : new Error(String(cause));
  const details = (error as { warnings?: ModdleWarning[] }).warnings?.[0]?.message;
  const text = details ? `${error.message}: ${describeSyntaxError(details)}` : describeSyntaxError(error.message);
  return `The file is not readable BPMN XML: ${oneLine(text)}. Check that it is a complete BPMN 2.0 file with <bpmn:definitions> as root`;
}

/**
 * The XML parser's "unparsable content X detected / line: L / column: C / nested error: E"
 * as one phrase, with the line and column counted from 1 as editors do (the parser counts
 * from 0). At the end of the file the parser gives no line, only an offset: a file cut
 * short says so instead.
 */
function describeSyntaxError(message: string): string {
  const m = /^unparsable content (?:([\s\S]*?) )?detected\s+line: (\d+)\s+column: (\d+)\s+nested error: (.+)$/.exec(
    message.trim(),
  );
  if (!m) return message;
  const [, near = '', line = '0', column = '0', nested = ''] = m;
  if (nested === 'unexpected end of file') return `${nested}: the file stops before its elements are closed (is it cut short?)`;
  const at = `at line ${Number(line) + 1}, column ${Number(column) + 1}`;
  if (nested === 'missing start tag') return `${nested} ${at}: the file does not start with an XML element`;
  return nested.includes('<') ? `${nested} ${at}` : `${nested} ${near.trim()} ${at}`;
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, '; ').trim();
}

function readWarnings(
  warnings: ModdleWarning[],
  xml: string,
  definitionsId: string,
): { diagnostics: Diagnostic[]; unresolved: UnresolvedReference[] } {
  const diagnostics: Diagnostic[] = [];
  const unresolved: UnresolvedReference[] = [];
  for (const warning of warnings) {
    const { message } = warning;
    if (message.startsWith('unresolved reference')) {
      const elementId = warning.element?.id;
      if (elementId) unresolved.push({ elementId, property: warning.property ?? '', reference: String(warning.value ?? '') });
    } else if (message.startsWith('unparsable content')) {
      diagnostics.push(describeUnparsable(warning, xml, definitionsId));
    }
    // Unknown attributes (vendor extensions) and the encoding fallback change nothing we read.
  }
  return { diagnostics, unresolved };
}

/** Unknown BPMN elements and duplicate ids are errors; unknown extension content is ignored with a warning. */
function describeUnparsable(warning: ModdleWarning, xml: string, definitionsId: string): Diagnostic {
  const nested = warning.error?.message ?? '';
  const line = Number(/line: (\d+)/.exec(warning.message)?.[1] ?? NaN);
  const column = Number(/column: (\d+)/.exec(warning.message)?.[1] ?? NaN);
  const where = Number.isFinite(line) ? ` (line ${line + 1})` : '';
  const tag = /<[^>]*>/.exec(warning.message)?.[0] ?? 'content';
  const duplicate = /^duplicate ID <(.*)>$/.exec(nested)?.[1];
  if (duplicate)
    return errorAt(duplicate, `Id ${duplicate} is used by more than one element${where}: give each element its own id`);
  const elementId = findIdAt(xml, line, column) ?? definitionsId;
  if (nested.startsWith('unknown type <bpmn:')) {
    return errorAt(elementId, `Unknown BPMN element ${tag}${where}: check its spelling against BPMN 2.0`);
  }
  return warningAt(
    elementId,
    `Ignored content ${tag}${where} that the BPMN and Camunda schemas do not define (${oneLine(nested)})`,
  );
}

/** The id attribute of the tag starting at (line, column), both 0-based as moddle reports them. */
function findIdAt(xml: string, line: number, column: number): string | undefined {
  if (!Number.isFinite(line) || !Number.isFinite(column)) return undefined;
  const text = xml.split('\n')[line]?.slice(column);
  return text === undefined ? undefined : /^<[^>]*?\sid\s*=\s*["']([^"']+)["']/.exec(text)?.[1];
}

async function readZeebeTasks(xml: string): Promise<Map<string, ZeebeTaskDefinition>> {
  const tasks = new Map<string, ZeebeTaskDefinition>();
  zeebeModdle ??= new BpmnModdle({ zeebe: zeebePackage });
  try {
    const { elementsById } = await zeebeModdle.fromXML(xml);
    for (const [id, element] of Object.entries(elementsById)) {
      const values = (element as { extensionElements?: { values?: { $type: string }[] } }).extensionElements?.values ?? [];
      const definition = values.find((value) => value.$type === 'zeebe:TaskDefinition');
      if (definition) tasks.set(id, definition as ZeebeTaskDefinition);
    }
  } catch {
    // The camunda read of the same text succeeded; a task without a zeebe type is reported as having no topic.
  }
  return tasks;
}
