-- Why: a thrown signal carries variables to its receivers (Camunda 7's camunda:in on the signal's
-- definition, Zeebe's input mappings on the throw event). The throwing transition computes them
-- and the delivery hands them to every receiver, so they wait here with the broadcast.
alter table signal_broadcasts add column variables jsonb not null default '{}';
