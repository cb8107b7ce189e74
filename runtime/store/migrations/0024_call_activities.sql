-- A call activity's child is an instance of its own, linked to the step that waits for it
-- (parent instance, step, the loop pass it runs in, the parent's generation, and for a
-- multi-instance call activity the element). One child per activation: a repeated start of the
-- same activation finds the one already there.
alter table instances add column parent_instance_id uuid;
alter table instances add column parent_step_id text;
alter table instances add column parent_scope_path text;
alter table instances add column parent_generation integer;
alter table instances add column parent_loop_index integer;
create unique index instances_parent_idx
  on instances (parent_instance_id, parent_step_id, parent_scope_path, parent_generation, coalesce(parent_loop_index, -1))
  where parent_instance_id is not null;

-- How a child ended, for its parent: written in the child's own transaction (the trigger below
-- for a completed or compensated child; the engine for a BPMN error thrown on), and taken by the
-- parent's transition, which deletes it. The child never locks its parent: parent and child
-- meet only here, so a parent's cancel (parent, then children) cannot deadlock with a child's end.
create table call_returns (
  child_instance_id  uuid primary key,
  parent_instance_id uuid not null,
  parent_step_id     text not null,
  parent_scope_path  text not null,
  parent_generation  integer not null,
  parent_loop_index  integer,
  outcome            text not null check (outcome in ('completed', 'compensated', 'error')),
  variables          jsonb not null default '{}',
  error_code         text,
  error_message      text,
  created_at         timestamptz not null default now()
);

create function baton_call_returned() returns trigger language plpgsql as $$
begin
  insert into call_returns (child_instance_id, parent_instance_id, parent_step_id, parent_scope_path, parent_generation,
                            parent_loop_index, outcome, variables)
  values (new.id, new.parent_instance_id, new.parent_step_id, new.parent_scope_path, new.parent_generation,
          new.parent_loop_index, new.status, new.variables)
  on conflict (child_instance_id) do nothing;
  return null;
end $$;

-- Every write path of a transition ends an instance with this update, so no path can forget it.
create trigger instances_call_returned after update of status on instances
  for each row when (new.parent_instance_id is not null and new.status in ('completed', 'compensated')
                     and old.status is distinct from new.status)
  execute function baton_call_returned();

alter table incidents drop constraint incidents_kind_check;
alter table incidents add constraint incidents_kind_check
  check (kind in ('task_failed', 'bpmn_error', 'no_matching_flow', 'condition_error', 'join_skipped', 'io_mapping', 'call_activity'));
