-- Fills a new service database (migrated, empty) with :n finished order instances shaped like
-- the ones the `wait-start` and `correlate` cases leave: the instance, its three completed
-- tasks and the two messages that started and resumed it (placed, then paid). Run by
-- `PRELOAD=N bench/run`; no ANALYZE, as on a database whose statistics lag a burst.
SET client_min_messages TO warning;
BEGIN;
INSERT INTO process_instances (process_model_identifier, process_id, status, data, correlations,
                               model_version, started_by, live_tasks)
SELECT 'bench:preload', 'bench_order', 'complete',
       jsonb_build_object('order', jsonb_build_object('order_id', 'p' || g),
                          'payment', jsonb_build_object('order_id', 'p' || g)),
       jsonb_build_object('order_id', 'p' || g), 'preload', 'loadgen', '[]'
FROM generate_series(1, :n) AS g;
INSERT INTO tasks (guid, process_instance_id, element_id, element_type, state, process_id)
SELECT gen_random_uuid(), i.id, e.element_id, e.element_type, 'COMPLETED', 'bench_order'
FROM process_instances i
CROSS JOIN (VALUES ('start', 'startEvent'), ('wait', 'intermediateCatchEvent'),
                   ('done', 'endEvent')) AS e(element_id, element_type)
WHERE i.process_model_identifier = 'bench:preload';
WITH receives AS (
    INSERT INTO message_instances (name, message_type, status, correlation_keys, correlation_key,
                                   process_instance_id)
    SELECT 'preload_paid', 'receive', 'completed', i.correlations, i.correlations::text, i.id
    FROM process_instances i WHERE i.process_model_identifier = 'bench:preload'
    RETURNING id, process_instance_id, correlation_keys)
INSERT INTO message_instances (name, message_type, status, payload, correlation_keys,
                               correlation_key, process_instance_id, counterpart_id, created_by)
SELECT 'preload_paid', 'send', 'completed', r.correlation_keys, r.correlation_keys,
       r.correlation_keys::text, r.process_instance_id, r.id, 'loadgen'
FROM receives r;
INSERT INTO message_instances (name, message_type, status, payload, correlation_keys,
                               correlation_key, process_instance_id, created_by)
SELECT 'preload_placed', 'send', 'completed', i.correlations, i.correlations,
       i.correlations::text, i.id, 'loadgen'
FROM process_instances i WHERE i.process_model_identifier = 'bench:preload';
COMMIT;
