-- Why: a script task whose script throws, runs past its budget or cannot be evaluated stops in an incident of its own kind.
alter table incidents drop constraint incidents_kind_check;
alter table incidents add constraint incidents_kind_check
  check (kind in ('task_failed', 'bpmn_error', 'no_matching_flow', 'condition_error', 'join_skipped', 'io_mapping', 'call_activity',
                  'script_error'));
