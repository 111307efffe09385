-- The receives a unit of work leaves waiting, written in its write-back's statement instead of
-- one statement each as they come, with the look in the buffer that each new receive makes:
-- a start that leaves its instance waiting made two statements of its own for them (the
-- receive's insert, then the look), two of its seven round trips at one client.
--
-- What the function keeps from the two statements it replaces (docs/architecture.md, the
-- buffered-message race): the names' locks are taken shared before the receives are inserted,
-- and the buffer is looked at in a later statement, whose snapshot (a new one for each
-- statement of a volatile PL/pgSQL function, in READ COMMITTED) is taken after the locks were
-- granted: a send buffered while a lock was waited for is seen. It only looks: a receive with
-- a buffered send that may match comes back (its id, and its place in `receives`, counted from
-- 1), and the caller claims the send as a new receive of a unit always did, in a statement of
-- its own. The probes are the claims' own index conditions: with expected values, the key in
-- `buffered_send_keys` (deleted with the claim or the expiry of its send); without, any ready,
-- unexpired send of the name.
--
-- Plain PostgreSQL only (Citus routes receives and their keys by bucket, one statement each).
CREATE FUNCTION workflow_wait_for_messages(receives jsonb)
RETURNS TABLE (receive_id bigint, receive_n integer)
LANGUAGE plpgsql
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off
AS $$
DECLARE
    receive_ids bigint[];
BEGIN
    -- (in one order: two units taking several names shared never wait for each other, but a
    -- buffering send takes one exclusively)
    PERFORM pg_advisory_xact_lock_shared(hashtextextended('message:' || l.name, 0))
       FROM (SELECT DISTINCT r.name FROM jsonb_to_recordset(receives) AS r(name text)
             ORDER BY r.name) l;
    WITH waiting AS (
        INSERT INTO message_instances (name, message_type, status, correlation_keys,
                                       correlation_key, process_instance_id, task_guid,
                                       shard_key)
        SELECT r.name, 'receive', 'ready', r.correlation_keys, r.correlation_key,
               r.process_instance_id, r.task_guid, r.shard_key
        FROM ROWS FROM (jsonb_to_recordset(receives) AS (name text, correlation_keys jsonb,
                 correlation_key text, process_instance_id bigint, task_guid uuid,
                 shard_key integer)) WITH ORDINALITY
             AS r(name, correlation_keys, correlation_key, process_instance_id, task_guid,
                  shard_key, n)
        -- (in order: the ids are drawn in it, so the i-th smallest is the i-th receive's)
        ORDER BY r.n
        RETURNING id)
    SELECT array_agg(id ORDER BY id) INTO receive_ids FROM waiting;
    RETURN QUERY
    SELECT receive_ids[r.n], r.n::integer
      FROM ROWS FROM (jsonb_to_recordset(receives) AS (name text, correlation_key text))
           WITH ORDINALITY AS r(name, correlation_key, n)
     WHERE CASE WHEN r.correlation_key = '{}' THEN
               EXISTS (SELECT 1 FROM message_instances m
                        WHERE m.name = r.name AND m.message_type = 'send'
                          AND m.status = 'ready'
                          AND (m.expires_at IS NULL OR m.expires_at > statement_timestamp()))
           ELSE
               EXISTS (SELECT 1 FROM buffered_send_keys k
                        WHERE k.name = r.name AND k.correlation_key = r.correlation_key)
           END;
END
$$;
