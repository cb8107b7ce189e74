-- Why: a transaction that sends a NOTIFY commits under PostgreSQL's cluster-wide notify
-- lock, held through its WAL flush (docs/ARCHITECTURE.md, "Notifications after the
-- commit"), and append_frame notifies its frame in every progress flush. The flushes Node
-- sends (store/progress.ts) notify after their commit themselves: their statement sets
-- baton.ring_after_commit for its own transaction, and append_frame keeps quiet then. The
-- framing trigger's calls (0011: a transaction's events with progress pending) notify
-- here: their callers do not know the seqs.
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
  insert into frames (instance_id, generation, seq, kind, data, at)
  values (p_instance, p_generation, next_seq, p_kind, p_data, p_at);
  if p_kind = 'instance:ended' then
    update frame_heads set ended_at = now() where instance_id = p_instance and generation = p_generation;
  end if;
  if coalesce(current_setting('baton.ring_after_commit', true), '') <> 'on' then
    perform pg_notify('baton_frames', p_instance::text || ' ' || p_generation || ' ' || next_seq);
  end if;
  return next_seq;
end $$;
