-- Why: the rows of tasks, waits, timers, messages and incidents outlive their transitions (the
-- history keeps them until retention), so their primary keys grow large. A random (version 4)
-- id puts each new row on a random leaf page of its key, and after every checkpoint the first
-- change of each such page writes the whole page to the WAL: with 300,000 completed tasks, the
-- task key alone wrote about 6 KB of WAL per new task. A version 7 id (RFC 9562) starts with the
-- time, so new rows land at the right edge of the key, next to the last one. Ids the engine
-- makes in Node are version 7 too (runtime/shared/uuid.ts); lock tokens stay random.
create or replace function time_ordered_uuid() returns uuid
language sql volatile parallel safe as $$
  -- gen_random_uuid() gives random bits with the version 4 and variant bits set. Its first six
  -- bytes become the Unix time in milliseconds (big-endian), and two more bits of byte 6 turn
  -- version 4 (0100) into version 7 (0111).
  select encode(
           set_bit(set_bit(
             overlay(uuid_send(gen_random_uuid())
                     placing substring(int8send(floor(extract(epoch from clock_timestamp()) * 1000)::bigint) from 3)
                     from 1 for 6),
             52, 1), 53, 1),
           'hex')::uuid
$$;

alter table external_tasks alter column id set default time_ordered_uuid();
alter table subscriptions alter column id set default time_ordered_uuid();
alter table timers alter column id set default time_ordered_uuid();
alter table messages alter column id set default time_ordered_uuid();
alter table incidents alter column id set default time_ordered_uuid();
