-- Why: people work on user tasks with tokens of their own (the person role), and a tasklist
-- shows new, claimed and ended tasks as they happen, whichever node changed them. A row
-- trigger on user-task waits announces each change on baton_user_tasks with the task and its
-- instance; the other waits (messages, signals) do not fire it.
alter table tokens drop constraint tokens_role_check;
alter table tokens add constraint tokens_role_check check (role in ('admin', 'worker', 'viewer', 'person'));

create function user_tasks_changed() returns trigger language plpgsql as $$
declare
  row subscriptions := coalesce(new, old);
begin
  perform pg_notify('baton_user_tasks', json_build_object(
    'id', row.id,
    'instanceId', row.instance_id,
    'change', case tg_op when 'INSERT' then 'created' when 'DELETE' then 'ended' else 'updated' end
  )::text);
  return null;
end $$;

create trigger user_tasks_created after insert on subscriptions
  for each row when (new.kind = 'user') execute function user_tasks_changed();
create trigger user_tasks_updated after update on subscriptions
  for each row when (new.kind = 'user' and new.assignee is distinct from old.assignee) execute function user_tasks_changed();
create trigger user_tasks_ended after delete on subscriptions
  for each row when (old.kind = 'user') execute function user_tasks_changed();
