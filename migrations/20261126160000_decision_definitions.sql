-- The DMN decisions each model's current version defines. A business rule task whose decision
-- is not in its own model finds it here. Unlike process ids, a decision id may be defined by
-- several models (each model's own copy wins inside it); looked up from elsewhere, such an id
-- is ambiguous and the lookup says so.
CREATE TABLE decision_definitions (
    decision_id              text NOT NULL,
    process_model_identifier text NOT NULL REFERENCES process_models (identifier) ON DELETE CASCADE,
    PRIMARY KEY (decision_id, process_model_identifier)
);
CREATE INDEX decision_definitions_model ON decision_definitions (process_model_identifier);
