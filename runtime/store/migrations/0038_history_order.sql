-- A history page (GET /api/instances/{id}/history?afterSeq=) must never skip an event that
-- commits after the page is read. Event seqs come from one sequence, and not every writer of an
-- instance's events holds its row lock (fetch-and-lock, the lease sweeper, late results): one
-- writer could take seq 100, another 101 and commit first, and a page read between the two
-- commits would end at 101 and never show 100.
--
-- So a writer numbers its events with baton_event_seq, which first takes a shared advisory lock
-- on the instance's bucket, held until its commit; writers never wait for each other there. A
-- reader reads once it holds that lock exclusively (baton_history_settled, tried without
-- waiting, so it never queues ahead of a writer): every seq it can then see belongs to a
-- committed transaction, and every seq taken later is higher. 256 buckets bound the locks one
-- writer holds (the lease sweeper writes up to 500 instances' events in one statement); two
-- instances in one bucket only make a reader wait for the other's writer.
create function baton_event_seq(p_instance uuid) returns bigint language plpgsql volatile as $$
begin
  perform pg_advisory_xact_lock_shared(hashtext('baton:history'), uuid_hash(p_instance) & 255);
  return nextval('events_seq');
end $$;

create function baton_history_settled(p_instance uuid) returns boolean language sql volatile as $$
  select pg_try_advisory_xact_lock(hashtext('baton:history'), uuid_hash(p_instance) & 255)
$$;

-- Without a default, an insert that does not number its event through baton_event_seq fails.
alter table events alter column seq drop default;
