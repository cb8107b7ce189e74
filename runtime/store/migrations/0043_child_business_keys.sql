-- A business key names one instance per process among the instances started on their own. A
-- called instance may share its parent's: a Camunda 7 call activity passes it
-- (`camunda:in businessKey`), to every element of a multi-instance one and to each pass of a
-- loop, and the bodies of parallel multi-instance subprocesses and event subprocess firings
-- carry it as the tasks inside them did in the process. So the unique index counts a child by
-- its own id: children never conflict, instances started on their own conflict as before. The
-- index keeps the business key first, so reads by it alone still use it.
create unique index instances_business_key_uq_new
  on instances (business_key, definition_key,
                (case when parent_instance_id is null then '00000000-0000-0000-0000-000000000000'::uuid else id end))
  where business_key is not null;
drop index instances_business_key_uq;
alter index instances_business_key_uq_new rename to instances_business_key_uq;
