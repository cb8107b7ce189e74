-- Why: live progress (docs/progress.md). Frames are a per-(instance, generation) replay
-- buffer with a dense seq, so a reconnecting client can ask for "everything after
-- seq N" and get no gap and no duplicate. The seq counter lives in frame_heads and
-- its row lock is held until commit, so seqs of one generation commit in order:
-- a reader that sees seq N has seen every seq below it.

create table frame_heads (
  instance_id uuid not null references instances (id) on delete cascade,
  generation  integer not null,
  last_seq    integer not null default 0 check (last_seq >= 0),
  -- set by the instance:ended frame; the generation takes no frames after it
  ended_at    timestamptz,
  primary key (instance_id, generation)
);
-- Retention deletes frames of generations that ended long ago.
create index frame_heads_ended_idx on frame_heads (ended_at) where ended_at is not null;

create table frames (
  instance_id uuid not null,
  generation  integer not null,
  seq         integer not null check (seq > 0),
  kind        text not null,
  data        jsonb not null default '{}'::jsonb,
  at          timestamptz not null default now(),
  primary key (instance_id, generation, seq),
  foreign key (instance_id, generation) references frame_heads (instance_id, generation) on delete cascade
);

-- Worker progress waits here until it is coalesced into one task:progress frame
-- (50 ms or 1 KiB, or when the next frame of its step is written). A row per call,
-- so a node that dies holding a batch loses nothing.
create table progress_reports (
  id          bigserial primary key,
  task_id     uuid not null references external_tasks (id) on delete cascade,
  instance_id uuid not null,
  generation  integer not null,
  step_id     text not null,
  data        jsonb not null,
  bytes       integer not null,
  at          timestamptz not null default now()
);
create index progress_reports_step_idx on progress_reports (instance_id, step_id);
create index progress_reports_task_idx on progress_reports (task_id);

-- Appends one frame at the next seq of its generation and notifies baton_frames.
-- Answers null (and writes nothing) once the generation has ended.
create function append_frame(p_instance uuid, p_generation integer, p_kind text, p_data jsonb, p_at timestamptz)
returns integer language plpgsql as $$
declare
  next_seq integer;
begin
  insert into frame_heads as h (instance_id, generation, last_seq)
  values (p_instance, p_generation, 1)
  on conflict (instance_id, generation) do update set last_seq = h.last_seq + 1
   where h.ended_at is null
  returning h.last_seq into next_seq;
  if next_seq is null then
    return null;
  end if;
  insert into frames (instance_id, generation, seq, kind, data, at)
  values (p_instance, p_generation, next_seq, p_kind, p_data, p_at);
  if p_kind = 'instance:ended' then
    update frame_heads set ended_at = now() where instance_id = p_instance and generation = p_generation;
  end if;
  perform pg_notify('baton_frames', p_instance::text || ' ' || p_generation || ' ' || next_seq);
  return next_seq;
end $$;

-- Turns the pending progress reports of one step into one task:progress frame.
-- The head row is locked first so the frame takes its place in seq order.
create function flush_progress(p_instance uuid, p_generation integer, p_step text)
returns integer language plpgsql as $$
declare
  batch record;
begin
  if not exists (select 1 from progress_reports where instance_id = p_instance and step_id = p_step) then
    return null;
  end if;
  insert into frame_heads (instance_id, generation) values (p_instance, p_generation)
  on conflict (instance_id, generation) do nothing;
  perform 1 from frame_heads where instance_id = p_instance and generation = p_generation for update;
  with taken as (
    delete from progress_reports
     where instance_id = p_instance and step_id = p_step and generation <= p_generation
    returning task_id, generation, data, id, at
  )
  select (array_agg(task_id order by id) filter (where generation = p_generation))[1] as task_id,
         jsonb_agg(data order by id) filter (where generation = p_generation) as reports,
         max(at) as at
    into batch
    from taken;
  if batch.reports is null then
    return null;
  end if;
  return append_frame(p_instance, p_generation, 'task:progress',
                      jsonb_build_object('taskId', batch.task_id, 'stepId', p_step, 'reports', batch.reports), batch.at);
end $$;

-- Every history event becomes a frame of its generation, at commit time: the head
-- lock is then the last lock the transaction takes, which keeps writers of one
-- instance from deadlocking (statements that write events of several instances
-- insert them ordered by instance id). Pending progress of the event's step is
-- flushed first, so a step's progress always precedes the frame that ends it.
create function frame_history_event() returns trigger language plpgsql as $$
begin
  if new.step_id is not null then
    perform flush_progress(new.instance_id, new.generation, new.step_id);
  end if;
  perform append_frame(new.instance_id, new.generation, new.kind,
                       jsonb_strip_nulls(jsonb_build_object('stepId', new.step_id, 'taskId', new.task_id, 'attempt', new.attempt)) || new.data,
                       new.at);
  if new.kind in ('instance:completed', 'instance:canceled', 'instance:compensated') then
    perform append_frame(new.instance_id, new.generation, 'instance:ended',
                         jsonb_build_object('status', substr(new.kind, 10)), new.at);
  end if;
  return null;
end $$;

create constraint trigger events_to_frames after insert on events
  deferrable initially deferred
  for each row execute function frame_history_event();
