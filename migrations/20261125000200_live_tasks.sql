-- The engine's live tasks, kept on the instance row as well: locking an instance (FOR UPDATE)
-- then returns its current tasks in the same statement, and a step needs no second query.
-- The tasks table stays the history and the index for lookups by guid.
ALTER TABLE process_instances ADD COLUMN live_tasks jsonb NOT NULL DEFAULT '[]';

UPDATE process_instances pi SET live_tasks = COALESCE(
    (SELECT jsonb_agg(jsonb_build_object(
                'guid', t.guid, 'element_id', t.element_id, 'element_type', t.element_type,
                'name', t.name, 'state', t.state, 'scope', t.scope, 'data', t.data)
            ORDER BY t.seq)
     FROM tasks t
     WHERE t.process_instance_id = pi.id AND t.state IN ('READY', 'WAITING', 'STARTED')),
    '[]');
