-- Timers: one row per waiting timer catch event or timer boundary, written in the transaction of
-- the step that reaches it and deleted in the one that fires or cancels it. Every writer holds
-- the instance's row lock first, so firing (lock instance, delete the row, step) happens once.
CREATE TABLE timers (
    id                  bigserial PRIMARY KEY,
    process_instance_id bigint NOT NULL REFERENCES process_instances (id) ON DELETE CASCADE,
    task_guid           uuid NOT NULL UNIQUE,
    element_id          text NOT NULL,
    due_at              timestamptz NOT NULL,
    -- a worker took it and is firing it (replicas skip it until then)
    claimed_until       timestamptz,
    created_at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX timers_due ON timers (due_at);
CREATE INDEX timers_instance ON timers (process_instance_id);

-- Signal catch events and signal boundaries waiting for a signal thrown by another instance or
-- sent through the API. Deleted (under the instance's lock) by the step that delivers it.
CREATE TABLE signal_waits (
    task_guid           uuid PRIMARY KEY,
    process_instance_id bigint NOT NULL REFERENCES process_instances (id) ON DELETE CASCADE,
    signal_name         text NOT NULL,
    created_at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX signal_waits_name ON signal_waits (signal_name, process_instance_id);
CREATE INDEX signal_waits_instance ON signal_waits (process_instance_id);

-- Timer start events of current model versions: the next occurrence of each. Replaced when a
-- version becomes current (kept as is when the new version has the same timer), moved on (or
-- deleted after the last occurrence) in the transaction that starts the instance.
CREATE TABLE start_timers (
    process_model_identifier text NOT NULL REFERENCES process_models (identifier) ON DELETE CASCADE,
    start_event_id      text NOT NULL,
    process_id          text NOT NULL,
    -- the timer's expression, to tell an unchanged timer from a new one on upload
    expression          text NOT NULL,
    due_at              timestamptz NOT NULL,
    interval_ms         bigint NOT NULL DEFAULT 0,
    -- occurrences after the due one (NULL: for ever)
    remaining           integer,
    claimed_until       timestamptz,
    PRIMARY KEY (process_model_identifier, start_event_id)
);
CREATE INDEX start_timers_due ON start_timers (due_at);

-- Signal start events of current model versions: every throw of the signal starts each.
CREATE TABLE signal_starts (
    signal_name              text NOT NULL,
    process_model_identifier text NOT NULL REFERENCES process_models (identifier) ON DELETE CASCADE,
    process_id               text NOT NULL,
    start_event_id           text NOT NULL,
    PRIMARY KEY (signal_name, process_model_identifier, start_event_id)
);
