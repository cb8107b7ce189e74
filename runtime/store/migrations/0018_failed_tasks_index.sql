-- Why: the Camunda external-task list and count (GET /engine-rest/external-task,
-- /count) show open tasks: ready, locked and failed (retries exhausted). Ready and locked
-- tasks have partial indexes; without this one for failed tasks, every such query reads
-- the whole table, done tasks included (docs/PERFORMANCE.md, "Reads that grow with
-- history"). Only failed tasks enter this index: nothing on the hot path.
create index external_tasks_failed_idx on external_tasks (created_at) where state = 'failed';
