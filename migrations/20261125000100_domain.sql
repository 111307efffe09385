-- Process models, instances, tasks, messages, the connector outbox and its logs.
-- The constraints are the point (docs/architecture.md, "Data model").

CREATE TABLE process_models (
    identifier          text PRIMARY KEY,
    display_name        text NOT NULL,
    primary_file_name   text,
    primary_process_id  text NOT NULL,
    summary             jsonb NOT NULL,
    -- sha256 over every file: the in-process compiled-model cache is keyed by it
    version_sha         text NOT NULL,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE process_model_files (
    process_model_identifier text NOT NULL REFERENCES process_models (identifier) ON DELETE CASCADE,
    file_name   text NOT NULL,
    content     text NOT NULL,
    sha256      text NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (process_model_identifier, file_name)
);

-- One model owns a start message name, system-wide.
CREATE TABLE message_triggers (
    message_name             text PRIMARY KEY,
    process_model_identifier text NOT NULL REFERENCES process_models (identifier) ON DELETE CASCADE,
    process_id               text NOT NULL,
    start_event_id           text NOT NULL
);

-- Retrieval expressions of every loaded model, by message name: how a payload's
-- correlation values are computed when the message is sent (API or engine).
CREATE TABLE correlation_retrievals (
    message_name             text NOT NULL,
    property_id              text NOT NULL,
    process_model_identifier text NOT NULL REFERENCES process_models (identifier) ON DELETE CASCADE,
    expression               text NOT NULL,
    PRIMARY KEY (message_name, property_id, process_model_identifier)
);

CREATE TABLE process_instances (
    id                       bigserial PRIMARY KEY,
    process_model_identifier text NOT NULL,
    process_id               text NOT NULL,
    status                   text NOT NULL CHECK (status IN
        ('running', 'waiting', 'user_input_required', 'complete', 'error', 'suspended', 'terminated')),
    data                     jsonb NOT NULL DEFAULT '{}',
    correlations             jsonb NOT NULL DEFAULT '{}',
    -- engine bookkeeping (join counters ...), opaque to SQL
    internal                 jsonb NOT NULL DEFAULT '{}',
    error                    jsonb,
    created_at               timestamptz NOT NULL DEFAULT now(),
    updated_at               timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX process_instances_model ON process_instances (process_model_identifier, id DESC);
CREATE INDEX process_instances_status ON process_instances (status, id DESC);

CREATE TABLE tasks (
    guid                uuid PRIMARY KEY,
    process_instance_id bigint NOT NULL REFERENCES process_instances (id) ON DELETE CASCADE,
    seq                 bigserial,
    element_id          text NOT NULL,
    element_type        text NOT NULL,
    name                text,
    state               text NOT NULL CHECK (state IN
        ('READY', 'WAITING', 'STARTED', 'COMPLETED', 'ERROR', 'CANCELLED')),
    scope               uuid,
    data                jsonb,
    retries_attempted   integer NOT NULL DEFAULT 0,
    retry_at            timestamptz,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX tasks_instance ON tasks (process_instance_id, seq);
-- the engine loads only live tasks
CREATE INDEX tasks_live ON tasks (process_instance_id) WHERE state IN ('READY', 'WAITING', 'STARTED');

CREATE TABLE message_instances (
    id                    bigserial PRIMARY KEY,
    name                  text NOT NULL,
    message_type          text NOT NULL CHECK (message_type IN ('send', 'receive')),
    status                text NOT NULL CHECK (status IN
        ('ready', 'running', 'completed', 'failed', 'cancelled', 'not_accepted')),
    payload               jsonb,
    -- property id -> value: computed from the payload (send) or expected (receive)
    correlation_keys      jsonb NOT NULL DEFAULT '{}',
    -- canonical text of correlation_keys: receives are found by (name, correlation_key)
    correlation_key       text NOT NULL DEFAULT '{}',
    process_instance_id   bigint REFERENCES process_instances (id) ON DELETE SET NULL,
    task_guid             uuid,
    message_instance_uuid uuid UNIQUE,
    expires_at            timestamptz,
    counterpart_id        bigint REFERENCES message_instances (id) ON DELETE SET NULL,
    failure_cause         text,
    created_by            text,
    created_at            timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now()
);
-- every correlation lookup of a waiting receive: an index lookup, never a scan
CREATE INDEX message_instances_ready_receive ON message_instances (name, correlation_key, id)
    WHERE status = 'ready' AND message_type = 'receive';
-- a new receive looks for buffered sends whose values contain its expected values
CREATE INDEX message_instances_ready_send ON message_instances (name, id)
    WHERE status = 'ready' AND message_type = 'send';
CREATE INDEX message_instances_ready_send_keys ON message_instances USING gin (correlation_keys)
    WHERE status = 'ready' AND message_type = 'send';
CREATE INDEX message_instances_expiry ON message_instances (expires_at)
    WHERE status = 'ready' AND expires_at IS NOT NULL;
CREATE INDEX message_instances_instance ON message_instances (process_instance_id, id DESC);
CREATE INDEX message_instances_task ON message_instances (task_guid) WHERE task_guid IS NOT NULL;
CREATE INDEX message_instances_name ON message_instances (name, id DESC);

-- The outbox: connector calls and their retries, taken with FOR UPDATE SKIP LOCKED.
CREATE TABLE jobs (
    id                  bigserial PRIMARY KEY,
    kind                text NOT NULL,
    process_instance_id bigint NOT NULL REFERENCES process_instances (id) ON DELETE CASCADE,
    task_guid           uuid NOT NULL,
    run_at              timestamptz NOT NULL DEFAULT now(),
    attempts            integer NOT NULL DEFAULT 0,
    locked_until        timestamptz,
    payload             jsonb NOT NULL DEFAULT '{}',
    created_at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX jobs_due ON jobs (run_at);
CREATE UNIQUE INDEX jobs_one_per_task ON jobs (task_guid, kind);

CREATE TABLE connector_logs (
    id                  bigserial PRIMARY KEY,
    process_instance_id bigint NOT NULL REFERENCES process_instances (id) ON DELETE CASCADE,
    task_guid           uuid NOT NULL,
    line                text NOT NULL,
    created_at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX connector_logs_instance ON connector_logs (process_instance_id, id);
