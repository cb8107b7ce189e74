// Camunda 7's task resource on Baton's user tasks: a completion keeps the variables' Camunda
// types beside their values, in the completion's own transaction, and can read the instance
// back as that transaction left it (withVariablesInReturn).
import type { Engine } from '../../engine/context.ts';
import { completeUserTask, type UserTaskActor } from '../../engine/user-tasks.ts';
import { loadInstanceVariables, writeVariableTypes, type InstanceVariables } from '../store/variables.ts';
import type { CamundaVariables } from './tasks.ts';

export interface CamundaCompletion {
  /** submit-form: the variables are checked against the task's form first */
  checkForm: boolean;
  /** a person completes only a task they hold; an operator completes any (Camunda 7's rule) */
  needsClaim: boolean;
  withVariablesInReturn: boolean;
}

export async function completeCamundaUserTask(
  engine: Engine,
  taskId: string,
  actor: UserTaskActor,
  variables: Pick<CamundaVariables, 'values' | 'types'>,
  how: CamundaCompletion,
): Promise<InstanceVariables | undefined> {
  let after: InstanceVariables | undefined;
  await completeUserTask(engine, taskId, actor, variables.values, {
    checkForm: how.checkForm,
    needsClaim: how.needsClaim,
    alongside: async (tx, instanceId) => {
      await writeVariableTypes(tx, instanceId, variables.types);
      if (how.withVariablesInReturn) after = await loadInstanceVariables(tx, instanceId);
    },
  });
  return after;
}
