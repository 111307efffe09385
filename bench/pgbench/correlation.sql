-- One correlation, as the service does it at least: lock the waiting receive found by
-- (name, correlation key), lock its instance, insert the send, update the receive and the
-- instance. pgbench -M prepared runs it (bench/pgbench/run).
\set k random(1, 100000)
BEGIN;
SELECT id AS receive_id FROM pb_messages
 WHERE name = 'paid' AND message_type = 'receive' AND correlation_key = '{"order_id":"' || :k || '"}'
 ORDER BY id LIMIT 1 FOR UPDATE \gset
SELECT id FROM pb_instances WHERE id = :k FOR UPDATE;
INSERT INTO pb_messages (name, message_type, status, correlation_key, process_instance_id, payload, counterpart_id)
VALUES ('paid', 'send', 'completed', '{"order_id":"' || :k || '"}', :k, '{"order_id": 1}', :receive_id);
UPDATE pb_messages SET status = 'completed', updated_at = now() WHERE id = :receive_id;
UPDATE pb_instances SET status = 'complete', data = '{"payment": {"order_id": 1}}', updated_at = now()
 WHERE id = :k;
END;
