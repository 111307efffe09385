-- Writes back every instance a unit of work stepped, with its changed tasks, in one round trip
-- (a batch of group commit steps several). `written` is a JSON array of
-- {id, status, data, correlations, internal, error, live_tasks, tasks}; `tasks` holds the
-- changed tasks' rows (guid, element_id, element_type, name, state, scope, data, process_id).
-- Each instance is one primary-key update: no plan here can scan, whatever the statistics.
CREATE FUNCTION workflow_write_instances(written jsonb)
RETURNS TABLE (written_id bigint, written_at timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
    w record;
BEGIN
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
