// Deploy: compile BPMN, then store it as the next version unless this exact XML is deployed.
import { createHash } from 'node:crypto';
import { compileBpmn } from '../compiler/index.ts';
import type { CompileOptions, CompileResult, Diagnostic, JavaTaskTopic } from '../compiler/plan.ts';
import type { PoolClient } from 'pg';
import type { Engine } from './context.ts';
import { withTransaction } from '../store/db.ts';
import { insertDefinition, type DefinitionRow } from '../store/definitions.ts';
import { replaceStartTimers } from '../store/start-timers.ts';
import { insertDeployment } from '../store/deployments.ts';
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
  const compiled = refuseUncompiled(await compileBpmn(xml, { ...options, ...(processId ? { processId } : {}) }));
  const resourceName = `${compiled.plan.processKey}.bpmn`;
  const { created, definition } = await withTransaction(engine.pool, (tx) =>
    storeDefinition(tx, compiled, xml, {
      resourceName,
      // A deploy of XML that is already deployed makes no deployment either.
      deploymentId: async () =>
        (
          await insertDeployment(tx, { name: compiled.plan.processKey, source: null }, [
            { name: resourceName, content: Buffer.from(xml) },
          ])
        ).id,
    }),
  );
  noteDeployed(engine, definition, created);
  return { created, definition, warnings: compiled.warnings, ...(compiled.javaTasks ? { javaTasks: compiled.javaTasks } : {}) };
}

export type Compiled = Extract<CompileResult, { ok: true }>;

/** A compiled plan, or the deploy's 400 naming every element the compiler refused. */
export function refuseUncompiled(compiled: CompileResult): Compiled {
  if (!compiled.ok) {
    const details = compiled.diagnostics.map((d) => ({ elementId: d.elementId, message: d.message, severity: d.severity }));
    throw new BatonError(
      'compile',
      `The BPMN does not compile: ${details.map((d) => `${d.elementId}: ${d.message}`).join('; ')}`,
      details,
    );
  }
  // A compiler bug, not bad input: refuse loudly rather than store a plan the engine cannot run.
  for (const plan of [compiled.plan, ...(compiled.bodies ?? []).map((b) => b.plan)]) {
    const schemaErrors = planSchemaErrors(plan);
    if (schemaErrors.length > 0)
      throw new Error(`Compiled plan of ${plan.processKey} breaks plan.schema.json: ${schemaErrors.join('; ')}`);
  }
  return compiled;
}

/**
 * Stores one compiled process in the caller's transaction as the next version of its key
 * (or finds this exact XML deployed, unless `always`), and schedules its timer start events.
 */
export async function storeDefinition(
  tx: PoolClient,
  compiled: Compiled,
  xml: string,
  at: { deploymentId: string | (() => Promise<string>); resourceName: string; always?: boolean },
): Promise<{ created: boolean; definition: DefinitionRow }> {
  await refuseTakenMessageStarts(tx, compiled.plan);
  // The process and the bodies of its parallel subprocesses share one deployment (their calls bind to it).
  let deployment: Promise<string> | undefined;
  const deploymentId =
    typeof at.deploymentId === 'string' ? at.deploymentId : () => (deployment ??= (at.deploymentId as () => Promise<string>)());
  const xmlSha256 = createHash('sha256').update(xml).digest('hex');
  const inserted = await insertDefinition(tx, {
    key: compiled.plan.processKey,
    fingerprint: compiled.fingerprint,
    xmlSha256,
    xml,
    plan: compiled.plan,
    ...at,
    deploymentId,
  });
  const bodiesAt = { ...at, deploymentId: inserted.created ? deploymentId : inserted.definition.deployment_id };
  for (const body of compiled.bodies ?? [])
    await insertDefinition(tx, {
      key: body.plan.processKey,
      fingerprint: body.fingerprint,
      xmlSha256,
      xml,
      plan: body.plan,
      ...bodiesAt,
    });
  // The new version's timer start events replace the old version's schedule.
  if (inserted.created)
    await replaceStartTimers(tx, inserted.definition.id, inserted.definition.key, startTimersOf(compiled.plan));
  return inserted;
}

/** After the commit: the plan is cached, and a new version is logged. */
export function noteDeployed(engine: Engine, definition: DefinitionRow, created: boolean): void {
  engine.plans.set(definition.id, definition.plan);
  if (created)
    engine.log.info(
      { definitionKey: definition.key, version: definition.version, fingerprint: definition.fingerprint },
      'definition:deployed',
    );
}
