-- Why: the developer's worker and the analyst's task node meet only through a topic string.
-- A worker publishes an element template for its topic (Camunda's element-template JSON) and
-- the designer offers it; the fetches each node saw tell the designer and lint which topics
-- a worker asks for (docs/workers.md, "Element templates").

-- One row per template id and version; a version is never changed once published (a changed
-- template needs a new version). A template without a version is its own key (-1 below: the
-- API accepts only versions >= 0).
create table element_templates (
  template_id   text not null check (length(template_id) between 1 and 255),
  version       integer check (version >= 0),
  -- which element-template schema the JSON follows ($schema): a Camunda 7 or a Zeebe one
  dialect       text not null check (dialect in ('camunda7', 'zeebe')),
  -- camunda:topic, or the zeebe:taskDefinition type
  topic         text not null check (length(topic) between 1 and 255),
  template      jsonb not null,
  published_at  timestamptz not null default now(),
  -- the name of the token that published it; null when the server runs without tokens
  published_by  text
);
create unique index element_templates_key on element_templates (template_id, coalesce(version, -1));
create index element_templates_topic_idx on element_templates (topic);

-- When each worker last fetched each topic, as a node last flushed it: nodes keep the fetches
-- in memory and write them every few seconds with one statement (engine/fetch-activity.ts),
-- so fetch-and-lock itself writes nothing here. Rows older than the activity window are
-- deleted by that same statement.
create table topic_fetches (
  topic            text not null,
  worker_id        text not null,
  last_fetched_at  timestamptz not null,
  primary key (topic, worker_id)
);
create index topic_fetches_fetched_idx on topic_fetches (last_fetched_at);
