-- Why: a service task's input mapping that cannot be evaluated stops its step in an incident
-- of its own kind (docs/ARCHITECTURE.md, "Input and output mappings").
alter table incidents drop constraint incidents_kind_check;
alter table incidents add constraint incidents_kind_check
  check (kind in ('task_failed', 'bpmn_error', 'no_matching_flow', 'condition_error', 'join_skipped', 'io_mapping'));
