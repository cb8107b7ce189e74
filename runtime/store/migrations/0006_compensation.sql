-- Why: sagas. A completed step with a compensation handler can be undone; handlers
-- run one at a time in reverse order of completion, so each completion gets a
-- monotonic number (completed_seq, from the history sequence) and each compensation
-- run is a durable queue: which handlers, in which order, how far it got.
alter table steps add column completed_seq bigint;
alter table steps drop constraint steps_status_check;
alter table steps add constraint steps_status_check
  check (status in ('active', 'completed', 'skipped', 'incident', 'canceled', 'failed', 'compensated'));
alter table instances drop constraint instances_status_check;
alter table instances add constraint instances_status_check
  check (status in ('running', 'incident', 'completed', 'canceled', 'compensating', 'compensated'));

create table compensations (
  instance_id     uuid not null references instances (id) on delete cascade,
  generation      integer not null,
  -- the completed step being undone; at most once per generation (docs/events.md, "Compensation (saga)")
  host_step_id    text not null,
  handler_step_id text not null,
  -- 1 runs first: the most recently completed host
  position        integer not null,
  -- the compensation throw/end event that asked for it; null for an onExhausted saga
  throw_step_id   text,
  state           text not null default 'pending' check (state in ('pending', 'running', 'done')),
  created_at      timestamptz not null default now(),
  done_at         timestamptz,
  primary key (instance_id, generation, host_step_id)
);
