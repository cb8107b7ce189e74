-- A multi-instance user task waits once per element: each element is its own subscription,
-- told apart by its index, with the element's own variables (element variable, loopCounter)
-- that its form and its assignee read. Other waits keep one row per step and pass: the
-- index is null there, and nulls count as equal, so the key still allows one.
alter table subscriptions add column loop_index integer;
alter table subscriptions add column local_variables jsonb;
alter table subscriptions drop constraint subscriptions_wait_key;
alter table subscriptions add constraint subscriptions_wait_key
  unique nulls not distinct (instance_id, step_id, generation, scope_path, loop_index);
