-- An escalation a called instance throws and nothing in it catches goes on to the call activity
-- that started it, as an uncaught BPMN error does (call_returns), but the child runs on: one row
-- per throw, written in the child's transition and taken by the parent's, which deletes it. A
-- child's own return waits while an escalation of the same child does, so the parent sees them
-- in the order the child wrote them.
create table call_escalations (
  id                 bigint generated always as identity primary key,
  child_instance_id  uuid not null,
  parent_instance_id uuid not null,
  parent_step_id     text not null,
  parent_scope_path  text not null,
  parent_generation  integer not null,
  parent_loop_index  integer,
  escalation_code    text not null,
  thrown_by          text not null,
  created_at         timestamptz not null default now()
);
create index call_escalations_child_idx on call_escalations (child_instance_id);
