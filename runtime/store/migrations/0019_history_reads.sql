-- Why: issue 8 ("stays fast when millions of finished instances pile up"). Three reads
-- of the API scanned every instance ever started (measured with a million finished
-- instances, docs/PERFORMANCE.md "Session 24"):
--
-- - by definition key: the instance list filtered by key, and the designer's heatmap
--   (polled every 2 s while a definition is open). The only index naming the key was the
--   business-key one, partial on `business_key is not null`, which a query by key alone
--   does not imply. This index answers a key's instances newest first, as the list pages
--   them and the heatmap samples them. It costs one more index entry per instance start
--   and per status change.
-- - by business key alone (GET /api/instances?businessKey=): the unique index led with
--   the definition key, so it served only both together. It now leads with the business
--   key; the pair is unique as before, and `on conflict (definition_key, business_key)`
--   still names it (the conflict target is a set of columns, not an order).
-- - by a rare ended status (canceled, compensated): no index, so a page of them read the
--   list index until it had found enough, or to its end. Only instances that end so
--   enter this one: nothing on the hot path.
--
-- The builds take a lock that lets reads go on; the drop at the end blocks them, so it comes
-- last, just before the commit.
create index instances_definition_idx on instances (definition_key, created_at desc, id desc);
create index instances_rare_status_idx on instances (status, created_at desc, id desc) where status in ('canceled', 'compensated');
create unique index instances_business_key_uq_new on instances (business_key, definition_key) where business_key is not null;
drop index instances_business_key_uq;
alter index instances_business_key_uq_new rename to instances_business_key_uq;
