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
