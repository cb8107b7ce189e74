-- A call activity may call again within one activation: the retry of its incident after its child
-- ended without completing (compensated, or canceled by a BPMN error nothing caught) starts a new
-- child. The attempt counts the children of the activation that had ended when the call started,
-- so a repeated start while a child still runs finds that one, as before.
alter table instances add column parent_attempt integer not null default 0;
drop index instances_parent_idx;
create unique index instances_parent_idx
  on instances (parent_instance_id, parent_step_id, parent_scope_path, parent_generation, coalesce(parent_loop_index, -1),
                parent_attempt)
  where parent_instance_id is not null;
