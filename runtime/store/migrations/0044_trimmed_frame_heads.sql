-- The sweeper deletes the frames of generations that ended longer ago than the frame retention,
-- all but each one's last. It found them as heads ended before the cutoff that still had such
-- frames, so every sweep, once a second, read every head that ever ended: 217 ms for 200,000
-- ended instances, a core's worth at a million. A trimmed head is marked now, and the index
-- holds only the ended heads not yet trimmed, so a sweep reads what is left to do. Heads that
-- ended before this migration are trimmed by the first sweeps after it, a batch at a time.
alter table frame_heads add column trimmed boolean not null default false;
create index frame_heads_untrimmed_idx on frame_heads (ended_at) where ended_at is not null and not trimmed;
drop index frame_heads_ended_idx;
