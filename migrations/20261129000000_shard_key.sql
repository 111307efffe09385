-- Every instance-owned row carries its instance's shard key (ADR 0014): 0 on plain
-- PostgreSQL (one bucket), a bucket's key on Citus, where these tables are distributed by it.
-- Citus wants the distribution column in every primary key, unique constraint and foreign key:
-- the service adds it to them when it distributes the tables (`store::citus`), so that on plain
-- PostgreSQL the keys and their indexes stay as narrow as they were. Statements name the
-- unique constraints they upsert on (`ON CONFLICT ON CONSTRAINT`), the same in both.
--
-- Messages lose their foreign keys to instances and to each other, and buffered sends' keys to
-- their sends: a send lives in the bucket of its uuid or correlation values, a key in its own,
-- neither need be its instance's, and Citus keeps foreign keys only within a shard. Neither
-- instances nor messages are ever deleted, so the rule they enforced on a delete never applied.

ALTER TABLE process_instances ADD COLUMN shard_key integer NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN shard_key integer NOT NULL DEFAULT 0;
ALTER TABLE message_instances ADD COLUMN shard_key integer NOT NULL DEFAULT 0;
ALTER TABLE buffered_send_keys ADD COLUMN shard_key integer NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN shard_key integer NOT NULL DEFAULT 0;
ALTER TABLE timers ADD COLUMN shard_key integer NOT NULL DEFAULT 0;
ALTER TABLE connector_logs ADD COLUMN shard_key integer NOT NULL DEFAULT 0;
ALTER TABLE signal_waits ADD COLUMN shard_key integer NOT NULL DEFAULT 0;

ALTER TABLE message_instances DROP CONSTRAINT message_instances_process_instance_id_fkey;
ALTER TABLE message_instances DROP CONSTRAINT message_instances_counterpart_id_fkey;
ALTER TABLE buffered_send_keys DROP CONSTRAINT buffered_send_keys_send_id_fkey;

-- one job per task and kind, as a constraint its upsert can name
DROP INDEX jobs_one_per_task;
ALTER TABLE jobs ADD CONSTRAINT jobs_one_per_task UNIQUE (task_guid, kind);

-- A buffered send's lookup keys live in their own buckets (a receive expecting a key looks in
-- the key's bucket), each naming the bucket of its send; on plain PostgreSQL both are 0.
ALTER TABLE buffered_send_keys ADD COLUMN send_shard_key integer NOT NULL DEFAULT 0;

-- On Citus, a receive whose correlation key is not in its instance's bucket is found through
-- a route in the key's bucket, naming the receive's bucket (a message looks in the buckets of
-- its keys only). Never written on plain PostgreSQL, where every bucket is one.
CREATE TABLE receive_routes (
    shard_key integer NOT NULL,
    name text NOT NULL,
    correlation_key text NOT NULL,
    receive_id bigint NOT NULL,
    receive_shard_key integer NOT NULL,
    PRIMARY KEY (name, correlation_key, receive_id, shard_key)
);

-- The instances written back carry their keys, and so do the jobs they are done with.
DROP FUNCTION workflow_write_instances(jsonb, uuid[]);

CREATE FUNCTION workflow_write_instances(written jsonb, done_jobs uuid[], done_keys integer[])
RETURNS TABLE (written_id bigint, written_at timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
    w record;
    i integer;
    done_task uuid;
    done_key integer;
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
END
$$;

-- The catalog check of a correlation lookup takes the current version as an argument, read by
-- the statement itself: on Citus the statement runs on the worker that holds the instance,
-- where a function may not query a reference table (its shard is joined only when the
-- statement names it).
DROP FUNCTION workflow_catalog_is(bigint);

CREATE FUNCTION workflow_catalog_is(expected bigint, current bigint) RETURNS boolean
LANGUAGE plpgsql STABLE AS $$
BEGIN
    IF expected IS NOT NULL AND expected IS DISTINCT FROM current THEN
        RAISE EXCEPTION 'the message catalog changed (a model was uploaded or deleted)'
            USING ERRCODE = 'WFCAT';
    END IF;
    RETURN true;
END
$$;
