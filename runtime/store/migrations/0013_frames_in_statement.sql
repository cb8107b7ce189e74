-- Why: framing by the trigger costs about 38% of PostgreSQL's time per one-task instance:
-- a deferred trigger call per history event (plpgsql, even when it finds the work done)
-- and a framing statement per transaction that reads the events back (docs/PERFORMANCE.md,
-- "Frames written in the statement"). The optimistic start and complete are one statement
-- each, outside any transaction; they write their frames themselves
-- (store/transition-statement.ts) and mark those events `framed`, and the trigger's WHEN
-- leaves such rows alone, so nothing is queued for them.
--
-- The lock-order argument of 0008/0011 holds for them too: the frame head is locked by
-- the last part of that statement, after every row lock it takes (the parts it depends
-- on are run first), and the statement's commit follows at once. Every other writer of
-- events (transactions, fetch-and-lock, the sweepers) is framed by the trigger at commit.

-- true: the statement that inserted the event also wrote its frame; null: the trigger frames it
alter table events add column framed boolean;

drop trigger events_to_frames on events;
create constraint trigger events_to_frames after insert on events
  deferrable initially deferred
  for each row when (new.framed is null) execute function frame_history_event();

-- Whether progress reports of the instance wait to be flushed, seen with a fresh snapshot
-- (a volatile plpgsql function takes one per query): called after the statement holds
-- the task rows, it also sees a report that committed while the statement waited for
-- one. With reports pending, the statement leaves its events to the trigger, which
-- flushes them before the frame that ends their step.
create function baton_progress_pending(p_instance uuid) returns boolean language plpgsql volatile as $$
begin
  return exists (select 1 from progress_reports where instance_id = p_instance);
end $$;
