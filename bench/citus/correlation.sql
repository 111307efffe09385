-- bench/pgbench/correlation.sql with every statement carrying the shard key, as the service's
-- hot statements will on Citus: each is then routed to the one shard (and node) holding the
-- correlation, and the transaction commits on that node alone.
\set k random(1, 100000)
BEGIN;
SELECT id AS receive_id FROM pb_messages
 WHERE shard_key = :k AND name = 'paid' AND message_type = 'receive'
   AND correlation_key = '{"order_id":"' || :k || '"}'
 ORDER BY id LIMIT 1 FOR UPDATE \gset
SELECT id FROM pb_instances WHERE shard_key = :k AND id = :k FOR UPDATE;
INSERT INTO pb_messages (shard_key, name, message_type, status, correlation_key, process_instance_id, payload, counterpart_id)
VALUES (:k, 'paid', 'send', 'completed', '{"order_id":"' || :k || '"}', :k, '{"order_id": 1}', :receive_id);
UPDATE pb_messages SET status = 'completed', updated_at = now() WHERE shard_key = :k AND id = :receive_id;
UPDATE pb_instances SET status = 'complete', data = '{"payment": {"order_id": 1}}', updated_at = now()
 WHERE shard_key = :k AND id = :k;
END;
