// Which process of the file to compile. Collaborations hold one process per
// pool; pools drawn only as black boxes have no flow elements and are skipped.
import { errorAt } from './diagnostics.ts';
import type { BpmnDefinitions, BpmnProcess } from './model.ts';
import type { Diagnostic } from './plan.ts';

export type SelectProcessResult = { ok: true; process: BpmnProcess } | { ok: false; diagnostic: Diagnostic };

export function selectProcess(definitions: BpmnDefinitions, definitionsId: string, processId?: string): SelectProcessResult {
  const processes = (definitions.rootElements ?? []).filter((e): e is BpmnProcess => e.$type === 'bpmn:Process');
  if (processId !== undefined) return selectNamedProcess(processes, definitionsId, processId);
  const withElements = processes.filter((p) => (p.flowElements ?? []).length > 0);
  const executable = withElements.filter((p) => p.isExecutable !== false);
  const [only] = executable;
  if (only && executable.length === 1) return { ok: true, process: only };
  if (executable.length > 1) {
    const ids = executable.map((p) => p.id ?? '?').join(', ');
    return fail(definitionsId, `File holds several processes (${ids}): choose one by passing its id as processId`);
  }
  const [firstDisabled] = withElements;
  if (firstDisabled?.id) {
    const ids = withElements.map((p) => p.id ?? '?').join(', ');
    return fail(
      firstDisabled.id,
      `No executable process: ${ids} ${withElements.length > 1 ? 'are' : 'is'} marked isExecutable="false"; set isExecutable="true" on the process to deploy`,
    );
  }
  return fail(definitionsId, 'File holds no process with flow elements: draw at least a start event in a process');
}

function selectNamedProcess(processes: BpmnProcess[], definitionsId: string, processId: string): SelectProcessResult {
  const process = processes.find((p) => p.id === processId);
  if (process?.id === undefined) {
    const ids = processes.map((p) => p.id ?? '?').join(', ') || 'none';
    return fail(definitionsId, `Process ${processId} is not in this file (processes: ${ids}): check the processId`);
  }
  if (process.isExecutable === false) {
    return fail(process.id, `Process ${process.id} is marked isExecutable="false": set isExecutable="true" to deploy it`);
  }
  return { ok: true, process };
}

function fail(elementId: string, message: string): SelectProcessResult {
  return { ok: false, diagnostic: errorAt(elementId, message) };
}
