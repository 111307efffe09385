-- The connector jobs a unit of work is done with (a callback applied, a proxy's answer
-- recorded) are deleted in the statement that writes its instances back: one round trip fewer
-- per service round trip. `done_jobs` holds their tasks' guids; each delete is one lookup of
-- the (task_guid, kind) index, so no plan here can scan either.
DROP FUNCTION workflow_write_instances(jsonb);

CREATE FUNCTION workflow_write_instances(written jsonb, done_jobs uuid[])
RETURNS TABLE (written_id bigint, written_at timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
    w record;
    done uuid;
BEGIN
    FOREACH done IN ARRAY done_jobs LOOP
        DELETE FROM jobs WHERE task_guid = done;
    END LOOP;
    FOR w IN
        SELECT * FROM jsonb_to_recordset(written) AS x(id bigint, status text, data jsonb,
            correlations jsonb, internal jsonb, error jsonb, live_tasks jsonb, tasks jsonb)
    LOOP
        INSERT INTO tasks (guid, process_instance_id, element_id, element_type, name, state,
                           scope, data, process_id)
        SELECT t.guid, w.id, t.element_id, t.element_type, t.name, t.state, t.scope, t.data,
               t.process_id
        FROM jsonb_to_recordset(w.tasks) AS t(guid uuid, element_id text, element_type text,
             name text, state text, scope uuid, data jsonb, process_id text)
        ON CONFLICT (guid) DO UPDATE SET state = EXCLUDED.state, data = EXCLUDED.data,
             updated_at = now();
        RETURN QUERY
        UPDATE process_instances p
           SET status = w.status, data = w.data, correlations = w.correlations,
               internal = w.internal, error = w.error, live_tasks = w.live_tasks,
               updated_at = now()
         WHERE p.id = w.id
        RETURNING p.id, p.updated_at;
    END LOOP;
END
$$;
