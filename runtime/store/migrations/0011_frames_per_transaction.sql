-- Why: issue 8. Every history event was framed on its own: a head update, a frame
-- insert and a NOTIFY per event, about 40% of what a one-task instance cost. Now the
-- first deferred trigger of a transaction for an (instance, generation) frames all of
-- that transaction's events of it at once (one head update, one multi-row insert, one
-- doorbell carrying the last seq) and marks the head with the transaction id, so the
-- triggers of the other events find the work done. The head lock is still taken at
-- commit, in the order the events were inserted, so nothing about deadlocks or the
-- commit order of seqs changes (docs/progress.md). Also baton_transition_guard, at the
-- end, for the optimistic starts and completes.

alter table frame_heads add column framed_xid xid8;

-- Frames the events of one (instance, generation) that the current transaction
-- inserted, from seq `p_from` on (the first of them: deferred triggers fire in insert
-- order, and seqs come from one sequence). Pending progress of a step is flushed
-- before the frame that ends it, so with progress pending the events go one by one.
create function frame_transaction_events(p_instance uuid, p_generation integer, p_from bigint)
returns void language plpgsql as $$
declare
  ev record;
  kinds text[];
  datas jsonb[];
  ats timestamptz[];
  n integer;
  ended_at_pos integer;
  last integer;
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

  -- Each event is one frame; an ending event is followed by instance:ended, after which
  -- the generation takes no more frames.
  select array_agg(x.kind order by x.seq, x.k), array_agg(x.data order by x.seq, x.k), array_agg(x.at order by x.seq, x.k)
    into kinds, datas, ats
    from (select e.seq, 0 as k, e.kind, e.at,
                 jsonb_strip_nulls(jsonb_build_object('stepId', e.step_id, 'taskId', e.task_id, 'attempt', e.attempt)) || e.data as data
            from events e
           where e.instance_id = p_instance and e.generation = p_generation and e.seq >= p_from
             and e.xmin = pg_current_xact_id()::xid
          union all
          select e.seq, 1, 'instance:ended', e.at, jsonb_build_object('status', substr(e.kind, 10))
            from events e
           where e.instance_id = p_instance and e.generation = p_generation and e.seq >= p_from
             and e.xmin = pg_current_xact_id()::xid
             and e.kind in ('instance:completed', 'instance:canceled', 'instance:compensated')) x;
  n := coalesce(cardinality(kinds), 0);
  if n = 0 then
    return;
  end if;
  ended_at_pos := array_position(kinds, 'instance:ended');
  if ended_at_pos is not null then
    n := ended_at_pos;
  end if;

  insert into frame_heads as h (instance_id, generation, last_seq, framed_xid)
  values (p_instance, p_generation, n, pg_current_xact_id())
  on conflict (instance_id, generation) do update set last_seq = h.last_seq + n, framed_xid = excluded.framed_xid
   where h.ended_at is null
  returning h.last_seq into last;
  if last is null then
    return; -- the generation has ended: it takes no frames
  end if;
  insert into frames (instance_id, generation, seq, kind, data, at)
  select p_instance, p_generation, last - n + i, kinds[i], datas[i], ats[i]
    from generate_series(1, n) as i;
  if ended_at_pos is not null then
    update frame_heads set ended_at = now() where instance_id = p_instance and generation = p_generation;
  end if;
  perform pg_notify('baton_frames', p_instance::text || ' ' || p_generation || ' ' || last);
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

-- An optimistic transition (runtime/store/instances.ts applyEffects with a guard) is one
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
