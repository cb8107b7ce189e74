-- Why: a signal thrown by a process reaches its receivers after the throwing transition commits
-- (they are other instances, locked by other transactions). The throw writes a row here in its own
-- transaction; a node delivers it to every subscription waiting when it was thrown and to every
-- signal start event in one transaction that deletes the row, so a crash in between delivers it
-- later, once.
create table signal_broadcasts (
  id          bigint generated always as identity primary key,
  name        text not null,
  instance_id uuid not null,
  step_id     text not null,
  created_at  timestamptz not null default now()
);
