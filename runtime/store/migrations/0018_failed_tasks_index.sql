-- Why: issue 8. The Camunda external-task list and count (GET /engine-rest/external-task,
-- /count) show open tasks: ready, locked and failed (retries exhausted). Ready and locked
-- tasks have partial indexes; failed ones had none, so every such query read the whole
-- table, done tasks included. Only failed tasks enter this index: nothing on the hot path.
create index external_tasks_failed_idx on external_tasks (created_at) where state = 'failed';
