-- A message no receive takes is refused; when a live instance of a model that uses the message
-- already has the message's correlation values (it will wait for it later), the refusal names
-- it. That lookup is by containment of the values in the instance's established ones.
CREATE INDEX process_instances_live_correlations ON process_instances
    USING gin (correlations jsonb_path_ops)
    WHERE status NOT IN ('complete', 'terminated');
