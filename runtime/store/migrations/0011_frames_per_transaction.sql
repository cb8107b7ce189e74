-- Why: framing each history event on its own (a head update, a frame insert and a NOTIFY
-- per event) costs about 40% of what a one-task instance costs (docs/PERFORMANCE.md,
-- "Frames written in the statement"). The first deferred trigger of a transaction for an
-- (instance, generation) frames all of that transaction's events of it at once (one head
-- update, one multi-row insert, one notification carrying the last seq) and marks the head
-- with the transaction id, so the triggers of the other events find the work done. The
-- head lock is taken at commit, in the order the events were inserted, so the lock order
-- and the commit order of seqs are those of 0008 (docs/progress.md). Also
-- baton_transition_guard, at the end, for the optimistic starts and completes.

alter table frame_heads add column framed_xid xid8;

-- Frames the events of one (instance, generation) that the current transaction
-- inserted, from seq `p_from` on (the first of them: deferred triggers fire in insert
-- order, and seqs come from one sequence). Pending progress of a step is flushed
-- before the frame that ends it, so with progress pending the events go one by one.
create function frame_transaction_events(p_instance uuid, p_generation integer, p_from bigint)
returns void language plpgsql
-- Custom plans would be made afresh on every call (the arrays differ each time): planning
-- cost more than running. The generic plans are as good here.
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

  -- One statement: each event is one frame; an ending event is followed by instance:ended,
  -- after which the generation takes no more frames (nor does an ended head take any).
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
       total as (select count(*)::int as n, bool_or(kind = 'instance:ended') as ends from kept),
       head as (
         insert into frame_heads as h (instance_id, generation, last_seq, framed_xid, ended_at)
         select p_instance, p_generation, total.n, pg_current_xact_id(), case when total.ends then now() end
           from total where total.n > 0
         on conflict (instance_id, generation) do update
            set last_seq = h.last_seq + excluded.last_seq, framed_xid = excluded.framed_xid, ended_at = excluded.ended_at
          where h.ended_at is null
         returning h.last_seq),
       written as (
         insert into frames (instance_id, generation, seq, kind, data, at)
         select p_instance, p_generation, head.last_seq - total.n + kept.n, kept.kind, kept.data, kept.at
           from kept, head, total)
  select pg_notify('baton_frames', p_instance::text || ' ' || p_generation || ' ' || head.last_seq) into ev from head;
end $$;

create or replace function frame_history_event() returns trigger language plpgsql as $$
begin
  -- The transaction's first trigger for this generation framed this event already.
  if exists (select 1 from frame_heads
              where instance_id = new.instance_id and generation = new.generation and framed_xid = pg_current_xact_id()) then
    return null;
  end if;
  perform frame_transaction_events(new.instance_id, new.generation, new.seq);
  return null;
end $$;

-- An optimistic transition (a guarded or insert write, runtime/store/transition-statement.ts) is one
-- statement outside any transaction; when the instance moved since it was read, this
-- aborts the statement, so none of its writes stay. SQLSTATE BT409 tells the caller to
-- fall back to the locked path.
create function baton_transition_guard(ok boolean) returns boolean language plpgsql as $$
begin
  if not ok then
    raise exception 'baton: the instance moved since the transition was computed' using errcode = 'BT409';
  end if;
  return true;
end $$;
