-- The elements of a parallel multi-instance subprocess run its body as child instances
-- (compiler/subprocess-bodies.ts). Such a child keeps the variables it started with, and its
-- return carries only the variables its body changed: the parent's variables that another
-- element or the parent itself wrote meanwhile are not written back with the child's stale copy.
alter table instances add column inherited_variables jsonb;

create or replace function baton_call_returned() returns trigger language plpgsql as $$
begin
  insert into call_returns (child_instance_id, parent_instance_id, parent_step_id, parent_scope_path, parent_generation,
                            parent_loop_index, outcome, variables)
  values (new.id, new.parent_instance_id, new.parent_step_id, new.parent_scope_path, new.parent_generation,
          new.parent_loop_index, new.status,
          case when new.inherited_variables is null then new.variables
               else (select coalesce(jsonb_object_agg(e.key, e.value), '{}'::jsonb)
                       from jsonb_each(new.variables) e
                      where new.inherited_variables -> e.key is distinct from e.value) end)
  on conflict (child_instance_id) do nothing;
  return null;
end $$;
