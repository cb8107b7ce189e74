-- A task or subscription inside a loop belongs to one pass: its scope path names the passes
-- of the loops around it ('/loop:Review#2'; '/' outside loops), so each pass's row is its own
-- (a pass that starts in the transition that ends the one before inserts its rows while the
-- same statement removes the old ones).
alter table external_tasks add column scope_path text not null default '/';
alter table external_tasks drop constraint external_tasks_element_key;
alter table external_tasks add constraint external_tasks_element_key unique (instance_id, step_id, generation, scope_path, loop_index);
alter table subscriptions add column scope_path text not null default '/';
alter table subscriptions drop constraint subscriptions_instance_id_step_id_generation_key;
alter table subscriptions add constraint subscriptions_wait_key unique (instance_id, step_id, generation, scope_path);
