-- Why: catch and boundary events wait for timers, messages and signals. Every wait
-- is a row: a timer row with its due time, or a subscription row for a message or
-- signal, created in the transition that activates the step and ended in the one
-- that fires or skips it. Messages that arrive before their subscription wait in
-- the inbox until they expire.
create table subscriptions (
  id              uuid primary key default gen_random_uuid(),
  instance_id     uuid not null references instances (id) on delete cascade,
  step_id         text not null,
  generation      integer not null,
  kind            text not null check (kind in ('message', 'signal')),
  name            text not null,
  correlation_key text,
  created_at      timestamptz not null default now(),
  unique (instance_id, step_id, generation)
);
create index subscriptions_match_idx on subscriptions (kind, name, correlation_key);

alter table messages add column expires_at timestamptz not null default now() + interval '1 hour';
comment on column messages.instance_id is 'target instance when published for one instance; the matched instance afterwards';

create index timers_instance_idx on timers (instance_id, step_id) where state = 'waiting';
