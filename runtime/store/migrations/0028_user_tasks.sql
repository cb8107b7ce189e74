-- Why: a user task waits for a person. Its wait is a subscription of kind 'user' (named by its
-- step), so it ends, is canceled and is reset with its step as every wait is; what was evaluated
-- when it was created (candidates, due dates, priority) and who holds it now live on that row.
alter table subscriptions drop constraint subscriptions_kind_check;
alter table subscriptions add constraint subscriptions_kind_check check (kind in ('message', 'signal', 'user'));
alter table subscriptions add column user_task jsonb;
alter table subscriptions add column assignee text;
alter table subscriptions add constraint subscriptions_user_task_check check ((kind = 'user') = (user_task is not null));
-- The tasklist reads open user tasks newest first, a page at a time.
create index subscriptions_user_tasks_idx on subscriptions (created_at desc, id desc) where kind = 'user';
