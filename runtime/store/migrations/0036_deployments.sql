-- Deployments: what one deploy call uploaded. Each definition belongs to the deployment that
-- created it; a deployment keeps every resource it was given (BPMN or not), so Camunda 7's
-- deployment API lists and serves them, and a call activity bound to its deployment finds the
-- called process deployed beside it. Each definition deployed so far becomes a deployment of
-- its own with the same id (the id Camunda clients have seen for it), holding its XML.
create table deployments (
  id          uuid primary key default gen_random_uuid(),
  name        text,
  source      text,
  deployed_at timestamptz not null default now()
);
create index deployments_name_idx on deployments (name, deployed_at desc);

create table deployment_resources (
  id            uuid primary key default gen_random_uuid(),
  deployment_id uuid not null references deployments (id) on delete cascade,
  name          text not null,
  content       bytea not null,
  unique (deployment_id, name)
);

alter table definitions add column deployment_id uuid references deployments (id);
alter table definitions add column resource_name text;

insert into deployments (id, name, deployed_at) select id, key, deployed_at from definitions;
insert into deployment_resources (id, deployment_id, name, content)
  select id, id, key || '.bpmn', convert_to(xml, 'UTF8') from definitions;
update definitions set deployment_id = id, resource_name = key || '.bpmn';

alter table definitions alter column deployment_id set not null;
alter table definitions alter column resource_name set not null;
create index definitions_deployment_idx on definitions (deployment_id);

-- Camunda's deployment/create makes a new version of every process it is given, even unchanged
-- (unless it asks for duplicate filtering): one XML may now hold several versions of a key.
alter table definitions drop constraint definitions_key_xml_sha256_key;
create index definitions_xml_idx on definitions (key, xml_sha256);
