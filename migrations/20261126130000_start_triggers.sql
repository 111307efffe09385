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
