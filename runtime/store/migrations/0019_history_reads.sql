-- Why: Baton stays fast when millions of finished instances pile up. Without these
-- indexes, three reads of the API scan every instance ever started (measured with a
-- million finished instances, docs/PERFORMANCE.md, "Reads that grow with history"):
--
-- - by definition key: the instance list filtered by key, and the designer's heatmap
--   (polled every 2 s while a definition is open). The business-key index, partial on
--   `business_key is not null`, is the other index naming the key, and a query by key
--   alone does not imply its predicate. This index answers a key's instances newest
--   first, as the list pages them and the heatmap samples them. It costs one more index
--   entry per instance start and per status change.
-- - by business key alone (GET /api/instances?businessKey=): a unique index that leads
--   with the definition key serves only both together. This one leads with the business
--   key; the pair stays unique, and `on conflict (definition_key, business_key)` names
--   it (the conflict target is a set of columns, not an order).
-- - by a rare ended status (canceled, compensated): without an index, a page of them
--   reads the list index until it has found enough, or to its end. Only instances that
--   end so enter this one: nothing on the hot path.
--
-- The builds take a lock that lets reads go on; the drop at the end blocks them, so it comes
-- last, just before the commit.
create index instances_definition_idx on instances (definition_key, created_at desc, id desc);
create index instances_rare_status_idx on instances (status, created_at desc, id desc) where status in ('canceled', 'compensated');
create unique index instances_business_key_uq_new on instances (business_key, definition_key) where business_key is not null;
drop index instances_business_key_uq;
alter index instances_business_key_uq_new rename to instances_business_key_uq;
