-- Why: an operator pauses an instance (a broken worker, a wrong variable, a dependency down)
-- without ending it. A suspended instance keeps its state; its work is parked in states the
-- fetch, the lease sweeper and the timer scheduler never pick: a ready or held task becomes
-- 'suspended' (its lease is taken back), a waiting timer 'suspended' with its due time kept.
-- Resuming turns them back, so a timer due meanwhile fires at once.
alter table instances add column suspended_at timestamptz;

alter table external_tasks drop constraint external_tasks_state_check;
alter table external_tasks add constraint external_tasks_state_check
  check (state in ('ready', 'locked', 'done', 'failed', 'canceled', 'suspended'));

alter table timers drop constraint timers_state_check;
alter table timers add constraint timers_state_check check (state in ('waiting', 'fired', 'canceled', 'suspended'));

-- The Camunda external-task list shows a suspended instance's tasks too; like failed tasks
-- they get a partial index of their own, which only suspended tasks enter.
create index external_tasks_suspended_idx on external_tasks (created_at) where state = 'suspended';
