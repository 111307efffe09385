-- The console's overview counts each model's instances per status up to a cap, and the list
-- filters by model and status: one index range each, instead of a walk through the model's
-- history filtered by status.
CREATE INDEX process_instances_model_status ON process_instances (process_model_identifier, status);

-- Search: instances by their data (JSON containment) and by a correlation value, finished
-- ones too. The correlation index was partial (live instances: what the message refusal looks
-- up); the full one serves that lookup as well.
CREATE INDEX process_instances_data ON process_instances USING gin (data jsonb_path_ops);
CREATE INDEX process_instances_correlations ON process_instances USING gin (correlations jsonb_path_ops);
DROP INDEX process_instances_live_correlations;
