-- Suspension: what a suspended instance waits for is held, not deleted, so that nothing reaches
-- it until it is resumed and then everything does.
--  * its waiting receives take status 'suspended': correlation (an index on status = 'ready')
--    passes them by, and a message for them follows the normal rules (another receiver, a
--    start, the buffer, or 400);
--  * its timers and connector calls are held: the workers pass them by, and they fire or are
--    made (if due) when it is resumed.
ALTER TABLE message_instances DROP CONSTRAINT message_instances_status_check;
ALTER TABLE message_instances ADD CONSTRAINT message_instances_status_check CHECK (status IN
    ('ready', 'running', 'completed', 'failed', 'cancelled', 'not_accepted', 'suspended'));

ALTER TABLE timers ADD COLUMN held boolean NOT NULL DEFAULT false;
DROP INDEX timers_due;
CREATE INDEX timers_due ON timers (due_at) WHERE NOT held;

ALTER TABLE jobs ADD COLUMN held boolean NOT NULL DEFAULT false;
DROP INDEX jobs_due;
CREATE INDEX jobs_due ON jobs (run_at) WHERE NOT held;
