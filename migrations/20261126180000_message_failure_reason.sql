-- Why a send was not taken, as a code a sender can act on: no_receiver (nothing waits for the
-- name and no model starts with it), correlation_mismatch (instances wait for the name, none
-- with the message's correlation values), expired (buffered, and its time to live ran out).
ALTER TABLE message_instances
    ADD COLUMN failure_reason TEXT
        CHECK (failure_reason IN ('no_receiver', 'correlation_mismatch', 'expired'));
UPDATE message_instances SET failure_reason = 'expired'
    WHERE status = 'cancelled' AND failure_cause = 'expired';
UPDATE message_instances SET failure_reason =
    CASE WHEN failure_cause LIKE 'no process instance waits%' THEN 'no_receiver'
         ELSE 'correlation_mismatch' END
    WHERE status = 'not_accepted';
