-- The sends a unit of work routed to a waiting receive or to a new instance are written with
-- its instances, in the statement that writes them back, instead of one statement each: their
-- rows (`sends`: the columns of `message_instances`, with the receive each completed) are
-- inserted and the receives they completed point at them. Their ids are not needed before the
-- commit (a send's answer is its instance's).
DROP FUNCTION workflow_write_instances(jsonb, uuid[], integer[]);

CREATE FUNCTION workflow_write_instances(written jsonb, done_jobs uuid[], done_keys integer[],
                                         sends jsonb)
RETURNS TABLE (written_id bigint, written_at timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
    w record;
    s record;
    i integer;
    done_task uuid;
    done_key integer;
    sent_id bigint;
BEGIN
    FOR i IN 1 .. coalesce(array_length(done_jobs, 1), 0) LOOP
        -- (plain variables: Citus routes a statement by its parameters, not by expressions)
        done_task := done_jobs[i];
        done_key := done_keys[i];
        DELETE FROM jobs WHERE task_guid = done_task AND shard_key = done_key;
    END LOOP;
    FOR w IN
        SELECT * FROM jsonb_to_recordset(written) AS x(id bigint, shard_key integer, status text,
            data jsonb, correlations jsonb, internal jsonb, error jsonb, live_tasks jsonb,
            tasks jsonb)
    LOOP
        INSERT INTO tasks (guid, shard_key, process_instance_id, element_id, element_type, name,
                           state, scope, data, process_id)
        SELECT t.guid, w.shard_key, w.id, t.element_id, t.element_type, t.name, t.state,
               t.scope, t.data, t.process_id
        FROM jsonb_to_recordset(w.tasks) AS t(guid uuid, element_id text, element_type text,
             name text, state text, scope uuid, data jsonb, process_id text)
        ON CONFLICT ON CONSTRAINT tasks_pkey DO UPDATE SET state = EXCLUDED.state, data = EXCLUDED.data,
             updated_at = EXCLUDED.updated_at;
        RETURN QUERY
        UPDATE process_instances p
           SET status = w.status, data = w.data, correlations = w.correlations,
               internal = w.internal, error = w.error, live_tasks = w.live_tasks,
               updated_at = now()
         WHERE p.id = w.id AND p.shard_key = w.shard_key
        RETURNING p.id, p.updated_at;
    END LOOP;
    FOR s IN
        SELECT * FROM jsonb_to_recordset(sends) AS x(shard_key integer, name text,
            message_type text, status text, payload jsonb, correlation_keys jsonb,
            correlation_key text, process_instance_id bigint, task_guid uuid, receive_id bigint,
            receive_shard_key integer, created_by text)
    LOOP
        INSERT INTO message_instances (name, message_type, status, payload, correlation_keys,
                                       correlation_key, process_instance_id, task_guid,
                                       counterpart_id, created_by, shard_key)
        VALUES (s.name, s.message_type, s.status, s.payload, s.correlation_keys,
                s.correlation_key, s.process_instance_id, s.task_guid, s.receive_id,
                s.created_by, s.shard_key)
        RETURNING id INTO sent_id;
        IF s.receive_id IS NOT NULL THEN
            UPDATE message_instances SET status = s.status, counterpart_id = sent_id,
                   updated_at = now()
             WHERE id = s.receive_id AND shard_key = s.receive_shard_key;
        END IF;
    END LOOP;
END
$$;
