-- A task inside a loop belongs to one pass: its scope path names the passes of the loops
-- around it ('/loop:Review#2'; '/' outside loops), so each pass's task is a row of its own.
alter table external_tasks add column scope_path text not null default '/';
alter table external_tasks drop constraint external_tasks_element_key;
alter table external_tasks add constraint external_tasks_element_key unique (instance_id, step_id, generation, scope_path, loop_index);
