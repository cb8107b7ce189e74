// Deploy: compile BPMN, then store it as the next version unless this exact XML is deployed.
import { createHash } from 'node:crypto';
import { compileBpmn } from '../compiler/index.ts';
import type { CompileOptions, Diagnostic, JavaTaskTopic } from '../compiler/plan.ts';
import type { Engine } from './context.ts';
import { withTransaction } from '../store/db.ts';
import { insertDefinition, type DefinitionRow } from '../store/definitions.ts';
import { replaceStartTimers } from '../store/start-timers.ts';
import { refuseTakenMessageStarts } from './event-starts.ts';
import { startTimersOf } from './start-timers.ts';
import { BatonError } from '../shared/errors.ts';
import { planSchemaErrors } from '../shared/plan-validator.ts';

export interface DeployResult {
  created: boolean;
  definition: DefinitionRow;
  warnings: Diagnostic[];
  /** the tasks running Java code that CompileOptions.javaTasksAsTopics made external tasks */
  javaTasks?: JavaTaskTopic[];
}

export async function deployDefinition(
  engine: Engine,
  xml: string,
  processId?: string,
  options: Omit<CompileOptions, 'processId'> = {},
): Promise<DeployResult> {
  const compiled = await compileBpmn(xml, { ...options, ...(processId ? { processId } : {}) });
  if (!compiled.ok) {
    const details = compiled.diagnostics.map((d) => ({ elementId: d.elementId, message: d.message, severity: d.severity }));
    throw new BatonError(
      'compile',
      `The BPMN does not compile: ${details.map((d) => `${d.elementId}: ${d.message}`).join('; ')}`,
      details,
    );
  }
  const schemaErrors = planSchemaErrors(compiled.plan);
  if (schemaErrors.length > 0) {
    // A compiler bug, not bad input: refuse loudly rather than store a plan the engine cannot run.
    throw new Error(`Compiled plan of ${compiled.plan.processKey} breaks plan.schema.json: ${schemaErrors.join('; ')}`);
  }
  const xmlSha256 = createHash('sha256').update(xml).digest('hex');
  const { created, definition } = await withTransaction(engine.pool, async (tx) => {
    await refuseTakenMessageStarts(tx, compiled.plan);
    const inserted = await insertDefinition(tx, {
      key: compiled.plan.processKey,
      fingerprint: compiled.fingerprint,
      xmlSha256,
      xml,
      plan: compiled.plan,
    });
    // The new version's timer start events replace the old version's schedule.
    if (inserted.created)
      await replaceStartTimers(tx, inserted.definition.id, inserted.definition.key, startTimersOf(compiled.plan));
    return inserted;
  });
  engine.plans.set(definition.id, definition.plan);
  if (created)
    engine.log.info(
      { definitionKey: definition.key, version: definition.version, fingerprint: definition.fingerprint },
      'definition:deployed',
    );
  return { created, definition, warnings: compiled.warnings, ...(compiled.javaTasks ? { javaTasks: compiled.javaTasks } : {}) };
}
