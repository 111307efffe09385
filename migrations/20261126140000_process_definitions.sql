-- The processes each model's current version defines. A call activity whose process is not in
-- its own model finds it here; two models may not define the same process id.
CREATE TABLE process_definitions (
    process_id               text PRIMARY KEY,
    process_model_identifier text NOT NULL REFERENCES process_models (identifier) ON DELETE CASCADE
);
CREATE INDEX process_definitions_model ON process_definitions (process_model_identifier);

-- The model version each process an instance called from another model ran on, pinned when
-- the instance first called it: {"<process id>": {"model": "<identifier>", "version": "<sha>"}}
ALTER TABLE process_instances ADD COLUMN callees jsonb NOT NULL DEFAULT '{}';
