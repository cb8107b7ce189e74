-- Why: Camunda 7 clients send typed variables (Date, Long, Json, File, ...) while Baton
-- keeps variables as plain JSON. This side table remembers the Camunda type of a value
-- so it survives a round trip, and holds File/Bytes contents outside the instance row.
-- A row describes one exact value: value_md5 is md5 of the jsonb text of the native
-- value it was written for. When a native caller later writes another value, the row
-- no longer matches and the type is inferred again from the JSON.
create table camunda_variables (
  instance_id uuid not null references instances (id) on delete cascade,
  name        text not null,
  value_md5   text not null,
  type        text not null
              check (type in ('String', 'Integer', 'Short', 'Long', 'Double', 'Boolean', 'Date',
                              'Json', 'Xml', 'Null', 'Object', 'Bytes', 'File')),
  value_info  jsonb not null default '{}'::jsonb,
  -- File and Bytes contents; the native value holds only a small descriptor
  content     bytea,
  written_at  timestamptz not null default now(),
  primary key (instance_id, name, value_md5)
);
