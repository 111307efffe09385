-- bench/pgbench/setup.sql's tables as the Citus plan shapes them (docs/scale-out.md): every row
-- carries its instance's `shard_key`, the distribution column of both tables, which are
-- co-located, so that one correlation's rows are on one node; primary keys include it, as Citus
-- requires. 100,000 instances, each with a waiting receive. Run by bench/citus/run on the
-- coordinator.
SET client_min_messages TO warning;
DROP TABLE IF EXISTS pb_messages, pb_instances;
CREATE TABLE pb_instances (
    shard_key   bigint NOT NULL,
    id          bigint NOT NULL,
    status      text NOT NULL,
    data        jsonb NOT NULL DEFAULT '{}',
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (shard_key, id)
);
CREATE TABLE pb_messages (
    shard_key           bigint NOT NULL,
    id                  bigserial,
    name                text NOT NULL,
    message_type        text NOT NULL,
    status              text NOT NULL,
    correlation_key     text NOT NULL,
    process_instance_id bigint,
    payload             jsonb,
    counterpart_id      bigint,
    updated_at          timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (shard_key, id)
);
CREATE INDEX pb_messages_receive ON pb_messages (name, correlation_key, id)
    WHERE message_type = 'receive';
SELECT create_distributed_table('pb_instances', 'shard_key');
SELECT create_distributed_table('pb_messages', 'shard_key', colocate_with => 'pb_instances');
-- an instance's shard key stands for the hash of its correlation value (here its order, g)
INSERT INTO pb_instances (shard_key, id, status) SELECT g, g, 'waiting' FROM generate_series(1, 100000) g;
INSERT INTO pb_messages (shard_key, name, message_type, status, correlation_key, process_instance_id)
SELECT g, 'paid', 'receive', 'ready', '{"order_id":"' || g || '"}', g
FROM generate_series(1, 100000) g;
VACUUM ANALYZE pb_instances;
VACUUM ANALYZE pb_messages;
