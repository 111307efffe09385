-- A connector call its proxy accepted (202) stays as its job, marked `accepted_at`, until the
-- task's callback (or the task's end) removes it: the 202 is recorded in one statement on the
-- job, without locking the instance, which the callback may hold at that moment. The task's
-- row says STARTED at once; the engine's state catches up when the instance is next loaded
-- (the load reads the instance's accepted calls through `jobs_accepted`). An accepted call is
-- never due again.
ALTER TABLE jobs ADD COLUMN accepted_at timestamptz;
DROP INDEX jobs_due;
CREATE INDEX jobs_due ON jobs (run_at) WHERE NOT held AND accepted_at IS NULL;
CREATE INDEX jobs_accepted ON jobs (process_instance_id) WHERE accepted_at IS NOT NULL;
