-- Tables shaped like the service's (process_instances, message_instances) for a pgbench run of
-- one correlation-shaped transaction (correlation.sql): 100,000 instances, each with a waiting
-- receive. Run by bench/pgbench/run in a database of its own.
SET client_min_messages TO warning;
DROP TABLE IF EXISTS pb_messages, pb_instances;
CREATE TABLE pb_instances (
    id          bigint PRIMARY KEY,
    status      text NOT NULL,
    data        jsonb NOT NULL DEFAULT '{}',
    updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE pb_messages (
    id                  bigserial PRIMARY KEY,
    name                text NOT NULL,
    message_type        text NOT NULL,
    status              text NOT NULL,
    correlation_key     text NOT NULL,
    process_instance_id bigint,
    payload             jsonb,
    counterpart_id      bigint,
    updated_at          timestamptz NOT NULL DEFAULT now()
);
-- the receive lookup (the service's index also has `status = 'ready'` in its predicate; here a
-- receive is looked up again after it completed, so that every transaction finds one)
CREATE INDEX pb_messages_receive ON pb_messages (name, correlation_key, id)
    WHERE message_type = 'receive';
INSERT INTO pb_instances (id, status) SELECT g, 'waiting' FROM generate_series(1, 100000) g;
INSERT INTO pb_messages (name, message_type, status, correlation_key, process_instance_id)
SELECT 'paid', 'receive', 'ready', '{"order_id":"' || g || '"}', g
FROM generate_series(1, 100000) g;
VACUUM ANALYZE pb_instances;
VACUUM ANALYZE pb_messages;
