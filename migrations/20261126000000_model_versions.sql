-- Every upload makes an immutable version of a model (identified by the content hash of all
-- its files); an instance records the version it started with and always steps against it.
CREATE TABLE process_model_versions (
    process_model_identifier text NOT NULL REFERENCES process_models (identifier) ON DELETE CASCADE,
    version_sha         text NOT NULL,
    primary_process_id  text NOT NULL,
    -- [{"name": ..., "content": ...}], in file-name order
    files               jsonb NOT NULL,
    created_at          timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (process_model_identifier, version_sha)
);

INSERT INTO process_model_versions (process_model_identifier, version_sha, primary_process_id, files)
SELECT pm.identifier, pm.version_sha, pm.primary_process_id,
       COALESCE((SELECT jsonb_agg(jsonb_build_object('name', f.file_name, 'content', f.content)
                                  ORDER BY f.file_name)
                 FROM process_model_files f WHERE f.process_model_identifier = pm.identifier), '[]')
FROM process_models pm;

ALTER TABLE process_instances ADD COLUMN model_version text;
UPDATE process_instances pi SET model_version = pm.version_sha
FROM process_models pm WHERE pm.identifier = pi.process_model_identifier;
-- an instance whose model is gone keeps an empty version (it cannot step, as before)
UPDATE process_instances SET model_version = '' WHERE model_version IS NULL;
ALTER TABLE process_instances ALTER COLUMN model_version SET NOT NULL;

-- "which versions do live instances still use" (GET /v1.0/process-models/{id})
CREATE INDEX process_instances_live_versions ON process_instances (process_model_identifier, model_version)
    WHERE status NOT IN ('complete', 'error', 'terminated');

-- Connector calls: how often a job has been leased since it was last (re)scheduled. A lease that
-- runs out means a dispatcher took the job and never recorded an answer; past a bound the task
-- fails instead of the proxy being called again and again.
ALTER TABLE jobs ADD COLUMN leases integer NOT NULL DEFAULT 0;

-- A new receive looks for the oldest buffered send its expected values match. That was a jsonb
-- containment test, which a generic plan (or missing statistics) turned into a walk over every
-- buffered send of the name: 100,000 buffered messages made each message start ~20-100 ms.
-- Instead, a buffered send is indexed under the canonical key of every non-empty subset of its
-- correlation values (at most 255), and a receive probes the one key of its expected values:
-- the same equality lookup the receive side uses, a btree probe whatever the buffer holds. Keys
-- are deleted with the claim or the expiry of their send.
CREATE TABLE buffered_send_keys (
    name            text NOT NULL,
    correlation_key text NOT NULL,
    send_id         bigint NOT NULL REFERENCES message_instances (id) ON DELETE CASCADE,
    PRIMARY KEY (name, correlation_key, send_id)
);
CREATE INDEX buffered_send_keys_send ON buffered_send_keys (send_id);
-- sends buffered before this migration: their full key (the common case: a receive expecting
-- every property of the message)
INSERT INTO buffered_send_keys (name, correlation_key, send_id)
SELECT name, correlation_key, id FROM message_instances
WHERE status = 'ready' AND message_type = 'send' AND correlation_key <> '{}';
DROP INDEX message_instances_ready_send_keys;
