-- Why: multi-instance service tasks run one external task per element of a
-- collection. A task row is keyed by its element (loop_index; 0 for every
-- other task) and carries the element's own variables (the element variable and
-- loopCounter), which fetch-and-lock merges over the instance variables. The
-- multi-instance step keeps its progress (elements, results, completed and
-- created elements) on its steps row, written in the same statement as the rest
-- of the transition.
alter table external_tasks add column loop_index integer not null default 0 check (loop_index >= 0);
alter table external_tasks add column local_variables jsonb not null default '{}';
alter table external_tasks drop constraint external_tasks_instance_id_step_id_generation_key;
alter table external_tasks add constraint external_tasks_element_key unique (instance_id, step_id, generation, loop_index);
alter table steps add column loop jsonb;
