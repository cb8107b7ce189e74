-- Why: a foreign key on a history table costs a check per row: `events` one on its
-- instance, `frames` one on its frame head, `frame_heads` one on its instance. A one-task
-- instance writes 8 events, 9 frames and a head, so 18 of the 24 checks of its three
-- statements (each an SPI query and a KEY SHARE lock on the parent row); without them
-- PostgreSQL's CPU per instance is about a tenth lower in the bench (docs/PERFORMANCE.md,
-- "History, frames and WAL"). Like the history tables of other engines, these have no
-- keys; the writers keep them consistent by construction:
--   * events and frames are written by the statement or transaction of a transition of
--     the instance, which inserts or updates the instance row (or holds it locked), or by
--     fetch-and-lock and lease expiry for a task row they hold, whose own key (kept) ties
--     it to a live instance; a frame is written only by whoever updates its head;
--   * the late result of a task (the one writer of events for an ended instance) takes
--     KEY SHARE on the instance row itself, as a key's check would (store/tasks.ts);
--   * retention deletes an instance's events, frame heads and frames in the statement
--     that deletes the instance (store/retention.ts), in place of a cascade.
alter table events drop constraint events_instance_id_fkey;
alter table frames drop constraint frames_instance_id_generation_fkey;
alter table frame_heads drop constraint frame_heads_instance_id_fkey;
