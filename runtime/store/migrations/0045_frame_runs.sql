-- A frame row costs more WAL for its row and key than for what it says: a heap tuple header,
-- the instance id, generation, seq and time, and an entry in frames_pkey, about 170 bytes a
-- frame against 60-100 of kind and data. A transaction writes all its frames of one generation
-- at once, under that generation's head lock (0011, 0013), so they are stored as one row: a run
-- of consecutive seqs ending at `last_seq`, their kinds and data side by side. A one-task
-- instance writes 3 runs instead of 9 frames (docs/PERFORMANCE.md, "History, frames and WAL").
--
-- The view `frames` answers one row per frame, as the table did, for reads that want every
-- frame of a generation; readers that start after a seq read the runs by their key, so a tail
-- read touches only the runs it needs (store/frames.ts).
create table frame_runs (
  instance_id uuid not null,
  generation integer not null,
  last_seq integer not null check (last_seq > 0),
  kinds text[] not null check (cardinality(kinds) between 1 and last_seq),
  data jsonb[] not null check (cardinality(data) = cardinality(kinds)),
  at timestamptz not null default now(),
  primary key (instance_id, generation, last_seq)
);

-- Frames stored so far stay as runs of one (retention removes them within a day by default).
insert into frame_runs (instance_id, generation, last_seq, kinds, data, at)
select instance_id, generation, seq, array[kind], array[data], at from frames;
drop table frames;

create view frames as
select r.instance_id, r.generation, r.last_seq - cardinality(r.kinds) + f.n::integer as seq, f.kind, f.data, r.at
  from frame_runs r cross join lateral unnest(r.kinds, r.data) with ordinality as f(kind, data, n);

create or replace function append_frame(p_instance uuid, p_generation integer, p_kind text, p_data jsonb, p_at timestamptz)
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
  insert into frame_runs (instance_id, generation, last_seq, kinds, data, at)
  values (p_instance, p_generation, next_seq, array[p_kind], array[p_data], p_at);
  if p_kind = 'instance:ended' then
    update frame_heads set ended_at = now() where instance_id = p_instance and generation = p_generation;
  end if;
  if coalesce(current_setting('baton.ring_after_commit', true), '') <> 'on' then
    perform pg_notify('baton_frames', p_instance::text || ' ' || p_generation || ' ' || next_seq);
  end if;
  return next_seq;
end $$;

-- As in 0011, with the transaction's frames of the generation written as one run.
create or replace function frame_transaction_events(p_instance uuid, p_generation integer, p_from bigint)
returns void language plpgsql
set plan_cache_mode = force_generic_plan
as $$
declare
  ev record;
begin
  if exists (select 1 from progress_reports where instance_id = p_instance) then
    for ev in select e.* from events e
               where e.instance_id = p_instance and e.generation = p_generation and e.seq >= p_from
                 and e.xmin = pg_current_xact_id()::xid
               order by e.seq loop
      if ev.step_id is not null then
        perform flush_progress(ev.instance_id, ev.generation, ev.step_id);
      end if;
      perform append_frame(ev.instance_id, ev.generation, ev.kind,
                           jsonb_strip_nulls(jsonb_build_object('stepId', ev.step_id, 'taskId', ev.task_id, 'attempt', ev.attempt)) || ev.data,
                           ev.at);
      if ev.kind in ('instance:completed', 'instance:canceled', 'instance:compensated') then
        perform append_frame(ev.instance_id, ev.generation, 'instance:ended', jsonb_build_object('status', substr(ev.kind, 10)), ev.at);
      end if;
    end loop;
    update frame_heads set framed_xid = pg_current_xact_id() where instance_id = p_instance and generation = p_generation;
    return;
  end if;

  with evs as (
         select e.seq, e.kind, e.at,
                jsonb_strip_nulls(jsonb_build_object('stepId', e.step_id, 'taskId', e.task_id, 'attempt', e.attempt)) || e.data as data
           from events e
          where e.instance_id = p_instance and e.generation = p_generation and e.seq >= p_from
            and e.xmin = pg_current_xact_id()::xid),
       numbered as (
         select x.*, row_number() over (order by x.seq, x.k)::int as n
           from (select seq, 0 as k, kind, at, data from evs
                 union all
                 select seq, 1, 'instance:ended', at, jsonb_build_object('status', substr(kind, 10)) from evs
                  where kind in ('instance:completed', 'instance:canceled', 'instance:compensated')) x),
       kept as (
         select * from numbered
          where n <= coalesce((select min(n) from numbered where kind = 'instance:ended'), 2147483647)),
       total as (select count(*)::int as n, bool_or(kind = 'instance:ended') as ends,
                        array_agg(kind order by n) as kinds, array_agg(data order by n) as data, min(at) as at
                   from kept),
       head as (
         insert into frame_heads as h (instance_id, generation, last_seq, framed_xid, ended_at)
         select p_instance, p_generation, total.n, pg_current_xact_id(), case when total.ends then now() end
           from total where total.n > 0
         on conflict (instance_id, generation) do update
            set last_seq = h.last_seq + excluded.last_seq, framed_xid = excluded.framed_xid, ended_at = excluded.ended_at
          where h.ended_at is null
         returning h.last_seq),
       written as (
         insert into frame_runs (instance_id, generation, last_seq, kinds, data, at)
         select p_instance, p_generation, head.last_seq, total.kinds, total.data, total.at
           from head, total)
  select pg_notify('baton_frames', p_instance::text || ' ' || p_generation || ' ' || head.last_seq) into ev from head;
end $$;
