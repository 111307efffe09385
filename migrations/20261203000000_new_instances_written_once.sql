-- A new instance's row is written once, by the write-back, with its first step's state: a
-- message start used to insert it (as `running`, empty) and then update it here, a second
-- write of its row and its seven index entries. Entries of `written` with a
-- `model_version` are new instances: inserted first (before the jobs and tasks that refer to
-- them), at that version of their model, which must still be current (the caller read it
-- with the message catalog, not in this transaction): else nothing is written and the
-- statement fails with WFCAT, as a catalog check does, for the transaction to run again.
-- Nobody else can lock a row not yet written, so inserting it first keeps the write-back's
-- order of the rows others lock (jobs, then tasks).
CREATE OR REPLACE FUNCTION workflow_write_instances(written jsonb, done_jobs uuid[], done_keys integer[],
                                         sends jsonb, calls jsonb)
RETURNS TABLE (written_id bigint, written_at timestamptz, call_task uuid)
LANGUAGE plpgsql AS $$
DECLARE
    n record;
    w record;
    s record;
    c record;
    i integer;
    done_task uuid;
    done_key integer;
    sent_id bigint;
BEGIN
    FOR n IN
        SELECT * FROM jsonb_to_recordset(written) AS x(id bigint, shard_key integer, status text,
            data jsonb, correlations jsonb, internal jsonb, error jsonb, live_tasks jsonb,
            process_model_identifier text, model_version text, process_id text, started_by text)
        WHERE x.model_version IS NOT NULL
    LOOP
        INSERT INTO process_instances (id, shard_key, process_model_identifier, model_version,
                                       process_id, status, data, correlations, internal, error,
                                       live_tasks, started_by)
        SELECT n.id, n.shard_key, m.identifier, m.version_sha, n.process_id, n.status, n.data,
               n.correlations, n.internal, n.error, n.live_tasks, n.started_by
        FROM process_models m
        WHERE m.identifier = n.process_model_identifier AND m.version_sha = n.model_version;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'model % is no longer at version %', n.process_model_identifier,
                n.model_version USING ERRCODE = 'WFCAT';
        END IF;
        written_id := n.id;
        written_at := now();
        call_task := NULL;
        RETURN NEXT;
    END LOOP;
    FOR c IN
        SELECT * FROM jsonb_to_recordset(calls) AS x(process_instance_id bigint,
            task_guid uuid, traceparent text, lease_seconds float8, shard_key integer)
    LOOP
        -- (plain record fields: Citus routes a statement by its parameters)
        INSERT INTO jobs (kind, process_instance_id, task_guid, run_at, traceparent,
                          locked_until, leases, shard_key)
        VALUES ('connector_call', c.process_instance_id, c.task_guid, now(), c.traceparent,
                now() + make_interval(secs => c.lease_seconds), 1, c.shard_key)
        ON CONFLICT ON CONSTRAINT jobs_one_per_task DO UPDATE SET run_at = EXCLUDED.run_at,
            locked_until = EXCLUDED.locked_until, attempts = jobs.attempts + 1,
            leases = EXCLUDED.leases, accepted_at = NULL, traceparent = EXCLUDED.traceparent
        RETURNING id INTO written_id;
        written_at := NULL;
        call_task := c.task_guid;
        RETURN NEXT;
    END LOOP;
    FOR i IN 1 .. coalesce(array_length(done_jobs, 1), 0) LOOP
        -- (plain variables, for the same reason)
        done_task := done_jobs[i];
        done_key := done_keys[i];
        DELETE FROM jobs WHERE task_guid = done_task AND shard_key = done_key;
    END LOOP;
    FOR w IN
        SELECT * FROM jsonb_to_recordset(written) AS x(id bigint, shard_key integer, status text,
            data jsonb, correlations jsonb, internal jsonb, error jsonb, live_tasks jsonb,
            tasks jsonb, model_version text)
    LOOP
        INSERT INTO tasks (guid, shard_key, process_instance_id, element_id, element_type, name,
                           state, scope, data, process_id)
        SELECT t.guid, w.shard_key, w.id, t.element_id, t.element_type, t.name, t.state,
               t.scope, t.data, t.process_id
        FROM jsonb_to_recordset(w.tasks) AS t(guid uuid, element_id text, element_type text,
             name text, state text, scope uuid, data jsonb, process_id text)
        ON CONFLICT ON CONSTRAINT tasks_pkey DO UPDATE SET state = EXCLUDED.state, data = EXCLUDED.data,
             updated_at = EXCLUDED.updated_at;
        CONTINUE WHEN w.model_version IS NOT NULL;
        RETURN QUERY
        UPDATE process_instances p
           SET status = w.status, data = w.data, correlations = w.correlations,
               internal = w.internal, error = w.error, live_tasks = w.live_tasks,
               updated_at = now()
         WHERE p.id = w.id AND p.shard_key = w.shard_key
        RETURNING p.id, p.updated_at, NULL::uuid;
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
