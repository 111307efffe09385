-- The write-back on plain PostgreSQL: `workflow_write_instances`' writes made a statement for
-- all the rows of a kind at once, not one per row. Each statement a PL/pgSQL loop runs starts
-- an executor and parses its table's CHECK constraints anew (`ExecConstraints`): in a batch of
-- group commit, a quarter of Postgres's time per message. Citus keeps the loops (a statement
-- per row, routed to its shard by its parameters).
--
-- The same order: new instances' rows (checked against their model's version: WFCAT), the
-- handed calls' jobs, the done jobs' deletes, the tasks, the other instances' rows, then the
-- sends and the receives they completed. Rows come back as the loops give them: each new
-- instance, each call's job, each other instance (the caller matches them by id).
--
-- The statements join the rows given with tables by key; a plan made once per connection
-- (and made while the tables were empty, on a new database) must still probe by key when the
-- tables are large: the function plans without sequential scans, hash or merge joins.
CREATE FUNCTION workflow_write_instances_together(written jsonb, done_jobs uuid[],
                                                  done_keys integer[], sends jsonb, calls jsonb)
RETURNS TABLE (written_id bigint, written_at timestamptz, call_task uuid)
LANGUAGE plpgsql
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off
AS $$
DECLARE
    new_rows integer;
    inserted integer;
BEGIN
    SELECT count(*) INTO new_rows FROM jsonb_array_elements(written) AS e(w)
     WHERE e.w ? 'model_version';
    IF new_rows > 0 THEN
        RETURN QUERY
        INSERT INTO process_instances (id, shard_key, process_model_identifier, model_version,
                                       process_id, status, data, correlations, internal, error,
                                       live_tasks, started_by)
        SELECT n.id, n.shard_key, m.identifier, m.version_sha, n.process_id, n.status, n.data,
               n.correlations, n.internal, n.error, n.live_tasks, n.started_by
        FROM jsonb_to_recordset(written) AS n(id bigint, shard_key integer, status text,
             data jsonb, correlations jsonb, internal jsonb, error jsonb, live_tasks jsonb,
             process_model_identifier text, model_version text, process_id text,
             started_by text)
        CROSS JOIN LATERAL (SELECT identifier, version_sha FROM process_models
                            WHERE identifier = n.process_model_identifier
                              AND version_sha = n.model_version LIMIT 1) m
        WHERE n.model_version IS NOT NULL
        RETURNING process_instances.id, now(), NULL::uuid;
        GET DIAGNOSTICS inserted = ROW_COUNT;
        IF inserted <> new_rows THEN
            RAISE EXCEPTION 'a model is no longer at the version its new instance was started at'
                USING ERRCODE = 'WFCAT';
        END IF;
    END IF;
    IF jsonb_array_length(calls) > 0 THEN
        RETURN QUERY
        INSERT INTO jobs (kind, process_instance_id, task_guid, run_at, traceparent,
                          locked_until, leases, shard_key)
        SELECT 'connector_call', c.process_instance_id, c.task_guid, now(), c.traceparent,
               now() + make_interval(secs => c.lease_seconds), 1, c.shard_key
        FROM jsonb_to_recordset(calls) AS c(process_instance_id bigint, task_guid uuid,
             traceparent text, lease_seconds float8, shard_key integer)
        ON CONFLICT ON CONSTRAINT jobs_one_per_task DO UPDATE SET run_at = EXCLUDED.run_at,
            locked_until = EXCLUDED.locked_until, attempts = jobs.attempts + 1,
            leases = EXCLUDED.leases, accepted_at = NULL, traceparent = EXCLUDED.traceparent
        RETURNING jobs.id, NULL::timestamptz, jobs.task_guid;
    END IF;
    IF coalesce(array_length(done_jobs, 1), 0) > 0 THEN
        -- (plain PostgreSQL: every key is the one shard's)
        DELETE FROM jobs WHERE task_guid = ANY (done_jobs) AND shard_key = ANY (done_keys);
    END IF;
    IF jsonb_array_length(written) > 0 THEN
        INSERT INTO tasks (guid, shard_key, process_instance_id, element_id, element_type,
                           name, state, scope, data, process_id)
        SELECT t.guid, w.shard_key, w.id, t.element_id, t.element_type, t.name, t.state,
               t.scope, t.data, t.process_id
        FROM ROWS FROM (jsonb_to_recordset(written) AS (id bigint, shard_key integer,
                 tasks jsonb)) WITH ORDINALITY AS w(id, shard_key, tasks, n)
        CROSS JOIN LATERAL ROWS FROM (jsonb_to_recordset(w.tasks) AS (guid uuid,
                 element_id text, element_type text, name text, state text, scope uuid,
                 data jsonb, process_id text)) WITH ORDINALITY
             AS t(guid, element_id, element_type, name, state, scope, data, process_id, n)
        -- (in order: a task's `seq` is its place in its instance's task list)
        ORDER BY w.n, t.n
        ON CONFLICT ON CONSTRAINT tasks_pkey DO UPDATE SET state = EXCLUDED.state,
            data = EXCLUDED.data, updated_at = EXCLUDED.updated_at;
    END IF;
    IF new_rows < jsonb_array_length(written) THEN
        RETURN QUERY
        UPDATE process_instances p
           SET status = w.status, data = w.data, correlations = w.correlations,
               internal = w.internal, error = w.error, live_tasks = w.live_tasks,
               updated_at = now()
          FROM jsonb_to_recordset(written) AS w(id bigint, shard_key integer, status text,
               data jsonb, correlations jsonb, internal jsonb, error jsonb, live_tasks jsonb,
               model_version text)
         WHERE w.model_version IS NULL AND p.id = w.id AND p.shard_key = w.shard_key
        RETURNING p.id, p.updated_at, NULL::uuid;
    END IF;
    IF jsonb_array_length(sends) > 0 THEN
        WITH sent AS (
            INSERT INTO message_instances (name, message_type, status, payload,
                                           correlation_keys, correlation_key,
                                           process_instance_id, task_guid, counterpart_id,
                                           created_by, shard_key)
            SELECT s.name, s.message_type, s.status, s.payload, s.correlation_keys,
                   s.correlation_key, s.process_instance_id, s.task_guid, s.receive_id,
                   s.created_by, s.shard_key
            FROM ROWS FROM (jsonb_to_recordset(sends) AS (shard_key integer, name text,
                     message_type text, status text, payload jsonb, correlation_keys jsonb,
                     correlation_key text, process_instance_id bigint, task_guid uuid,
                     receive_id bigint, created_by text)) WITH ORDINALITY
                 AS s(shard_key, name, message_type, status, payload, correlation_keys,
                      correlation_key, process_instance_id, task_guid, receive_id,
                      created_by, n)
            -- (in order: a message's id is its place among the messages)
            ORDER BY s.n
            RETURNING id, counterpart_id, status)
        UPDATE message_instances r SET status = sent.status, counterpart_id = sent.id,
               updated_at = now()
          FROM sent
         WHERE sent.counterpart_id IS NOT NULL AND r.id = sent.counterpart_id;
    END IF;
END
$$;
