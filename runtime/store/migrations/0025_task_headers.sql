-- Why: a task's headers (zeebe:taskHeaders, camunda:properties of its step) reach the worker
-- that fetches it; null for the many tasks without any, which costs nothing per row.
alter table external_tasks add column headers jsonb;
