// An operator's edit of an instance's variables, or of an open subprocess's locals: one
// transition, guarded by the revision the operator read, so an edit made on a stale view changes nothing. Conditional events look at the
// new values in that transition, as after any other (Camunda 7 evaluates them on variable
// writes too); a suspended instance's look waits for its resume.
import { emptyEffects } from '../model/effects.ts';
import { settleConditionalEvents } from './advance.ts';
import { planOf, type Engine } from './context.ts';
import { editScopeLocals } from './scope-variables.ts';
import { isEnded } from './incidents.ts';
import { commitTransition } from './transition.ts';
import type { InstanceStatus } from '../model/vocabulary.ts';
import { withTransaction, type PoolClient } from '../store/db.ts';
import { lockInstance } from '../store/instances.ts';
import { BatonError } from '../shared/errors.ts';
import { jsonbTextBytes } from '../shared/variables-size.ts';

export interface EditVariablesRequest {
  instanceId: string;
  /** the revision the edit was made on; absent: the current one (Camunda 7's variable writes name none) */
  revision?: number;
  set?: Record<string, unknown>;
  delete?: string[];
  /** an open subprocess with mappings: its local variables are edited instead of the process's */
  scope?: string;
  /** the token name of the caller, kept in the history event */
  by?: string;
  /** runs in the edit's transaction, e.g. to keep the values' Camunda types */
  alongside?: (tx: PoolClient, instanceId: string) => Promise<void>;
}

export type EditVariablesResult =
  | { ok: true; revision: number; status: InstanceStatus; variables: Record<string, unknown> }
  | { ok: false; reason: 'not_found' }
  | { ok: false; reason: 'stale'; revision: number }
  | { ok: false; reason: 'ended'; status: InstanceStatus }
  | { ok: false; reason: 'no_scope'; message: string };

export async function editVariables(engine: Engine, req: EditVariablesRequest): Promise<EditVariablesResult> {
  const set = req.set ?? {};
  const deleted = req.delete ?? [];
  const both = deleted.filter((name) => Object.hasOwn(set, name));
  if (both.length > 0)
    throw new BatonError('validation', `Invalid request body: ${both.join(', ')} both set and deleted; name each once`, {
      names: both,
    });
  if (Object.keys(set).length === 0 && deleted.length === 0)
    throw new BatonError('validation', 'Invalid request body: set or delete at least one variable');
  return withTransaction(engine.pool, async (tx) => {
    const instance = await lockInstance(tx, req.instanceId);
    if (!instance) return { ok: false, reason: 'not_found' };
    if (isEnded(instance.status)) return { ok: false, reason: 'ended', status: instance.status };
    if (req.revision !== undefined && instance.revision !== req.revision)
      return { ok: false, reason: 'stale', revision: instance.revision };
    const plan = await planOf(engine, instance.definition_id, tx);
    const fx = emptyEffects();
    const variables = { ...instance.variables };
    let edited = variables;
    if (req.scope === undefined) {
      Object.assign(variables, set);
      for (const name of deleted) delete variables[name];
    } else {
      const locals = editScopeLocals(plan, req.scope, instance.state, set, deleted, fx);
      if (!locals.ok) return { ok: false, reason: 'no_scope', message: locals.message };
      edited = locals.variables;
    }
    const max = engine.options.maxVariablesBytes;
    const bytes = Number.isFinite(max) ? jsonbTextBytes(variables) + (edited === variables ? 0 : jsonbTextBytes(edited)) : 0;
    if (bytes > max)
      throw new BatonError(
        'payload_too_large',
        `With this edit instance ${instance.id} would hold ${bytes} bytes of variables, above the limit of ${max} bytes (BATON_MAX_VARIABLES_BYTES)`,
        { limit: 'maxVariablesBytes', max, actual: bytes },
      );
    fx.events.push({
      kind: 'variables:edited',
      data: {
        set: Object.keys(set),
        deleted,
        by: req.by ?? null,
        revision: instance.revision,
        ...(req.scope !== undefined ? { scope: req.scope } : {}),
      },
    });
    if (!instance.suspended_at) settleConditionalEvents(plan, instance.state, variables, fx);
    const status = await commitTransition(tx, instance, fx, variables, { plan });
    await req.alongside?.(tx, instance.id);
    return { ok: true, revision: instance.revision + 1, status, variables: edited };
  });
}
