-- Why: the authorizer keeps the stored tokens it has looked up (security/auth.ts) and must
-- drop them the moment one is created, revoked or deleted, by whatever wrote it: the CLI,
-- another node, or psql. A statement trigger announces every change on baton_tokens; the
-- payload is empty because a listener forgets everything it knows of the table.
create function tokens_changed() returns trigger language plpgsql as $$
begin
  perform pg_notify('baton_tokens', '');
  return null;
end $$;

create trigger tokens_changed after insert or update or delete or truncate on tokens
  for each statement execute function tokens_changed();
