-- Who started an instance (the token subject of the request that created it; NULL when a
-- message or another instance started it without one): get_process_initiator_user() in scripts.
ALTER TABLE process_instances ADD COLUMN started_by text;
