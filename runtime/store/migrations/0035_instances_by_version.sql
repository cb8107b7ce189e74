-- An older version's heatmap and an instance search by version read that version's newest
-- instances from an index that leads with the definition (one key and version), instead of
-- walking the key's newer instances of other versions (instances_definition_idx). One more index
-- entry per started instance; docs/PERFORMANCE.md has its cost.
create index instances_version_idx on instances (definition_id, created_at desc, id desc);
