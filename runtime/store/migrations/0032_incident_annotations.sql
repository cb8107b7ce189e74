-- Why: an operator notes why an incident is open or what is being done about it (Camunda's
-- incident annotation); the note stays with the incident, also once it is resolved.
alter table incidents add column annotation text;
