-- Why: analysts keep drafts in the designer; a draft is saved without deploying,
-- so it lives apart from the immutable, versioned definitions.
create table diagrams (
  id         uuid primary key default gen_random_uuid(),
  name       text not null check (length(name) between 1 and 255),
  xml        text not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index diagrams_updated_idx on diagrams (updated_at desc, id);
