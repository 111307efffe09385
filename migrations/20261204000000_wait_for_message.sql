-- A new receive written and the buffer looked in for it, in one round trip (plain PostgreSQL).
-- A receive takes its name's lock shared before it is written; a send that buffers itself
-- takes it exclusively after finding no receive: so either the send finds the receive, or the
-- receive finds the send. For that the buffer must be read after the lock was granted, in a
-- snapshot that has the send buffered by the transaction the lock waited for. One statement
-- (CTEs) reads in the snapshot taken before that wait; each statement of a VOLATILE function
-- takes its own: the lock, the insert and the claim are statements here, in one round trip.
--
-- The claim is `store::messages`'s (CLAIM_BUFFERED_SEND_BY_KEY, CLAIM_ANY_BUFFERED_SEND): the
-- oldest buffered, unexpired send of the name under the receive's key (any send of the name
-- when it expects no values), its keys dropped; a send claimed completes the receive at once.
-- Each is a probe by key whatever the tables hold (plans without sequential scans, hash or
-- merge joins: plans made once per session, maybe while the tables were empty).
CREATE FUNCTION workflow_wait_for_message(msg_name text, expected jsonb, expected_key text,
                                          instance bigint, task uuid, shard integer)
RETURNS TABLE (new_receive bigint, claimed_send bigint, claimed_payload jsonb)
LANGUAGE plpgsql VOLATILE
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off
AS $$
#variable_conflict use_column
DECLARE
    r_id bigint;
    s_id bigint;
    s_payload jsonb;
BEGIN
    PERFORM pg_advisory_xact_lock_shared(hashtextextended('message:' || msg_name, 0));
    INSERT INTO message_instances (name, message_type, status, correlation_keys,
                                   correlation_key, process_instance_id, task_guid, shard_key)
    VALUES (msg_name, 'receive', 'ready', expected, expected_key, instance, task, shard)
    RETURNING id INTO r_id;
    -- (a statement of its own: its snapshot is taken now, after the lock)
    IF expected_key = '{}' THEN
        UPDATE message_instances SET status = 'completed', counterpart_id = r_id,
               process_instance_id = COALESCE(process_instance_id, instance), updated_at = now()
         WHERE id = (SELECT id FROM message_instances
                      WHERE name = msg_name AND message_type = 'send' AND status = 'ready'
                        AND (expires_at IS NULL OR expires_at > statement_timestamp())
                      ORDER BY id LIMIT 1 FOR UPDATE)
           AND status = 'ready'
        RETURNING id, payload INTO s_id, s_payload;
    ELSE
        UPDATE message_instances SET status = 'completed', counterpart_id = r_id,
               process_instance_id = COALESCE(process_instance_id, instance), updated_at = now()
         WHERE id = (SELECT m.id FROM (SELECT send_id FROM buffered_send_keys
                                        WHERE name = msg_name AND correlation_key = expected_key
                                        ORDER BY send_id LIMIT 100) k
                     CROSS JOIN LATERAL (SELECT id FROM message_instances
                          WHERE id = k.send_id AND status = 'ready'
                            AND (expires_at IS NULL OR expires_at > statement_timestamp())
                          FOR UPDATE) m
                     ORDER BY k.send_id LIMIT 1)
           AND status = 'ready'
        RETURNING id, payload INTO s_id, s_payload;
    END IF;
    IF s_id IS NOT NULL THEN
        DELETE FROM buffered_send_keys WHERE send_id = s_id;
        UPDATE message_instances SET status = 'completed', counterpart_id = s_id,
               updated_at = now()
         WHERE id = r_id AND shard_key = shard;
    END IF;
    RETURN QUERY SELECT r_id, s_id, s_payload;
END
$$;
