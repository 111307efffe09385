-- SpiffArena's data stores. JSON, JSON file and KKV stores are created beforehand (admin
-- API) with an identifier (the bpmn:dataStore id models use) and a location (a process group
-- path; '' for every model); a model uses the store of its identifier at the deepest location
-- that contains the model. Typeahead stores need no creation: models write categories.
CREATE TABLE data_stores (
    id BIGSERIAL PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('json', 'json_file', 'kkv')),
    identifier TEXT NOT NULL,
    location TEXT NOT NULL,
    name TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    -- the value of a JSON or JSON file store
    data JSONB NOT NULL DEFAULT '{}'::jsonb,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (kind, identifier, location)
);

CREATE TABLE kkv_data_store_entries (
    data_store_id BIGINT NOT NULL REFERENCES data_stores (id) ON DELETE CASCADE,
    top_level_key TEXT NOT NULL,
    secondary_key TEXT NOT NULL,
    value JSONB NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (data_store_id, top_level_key, secondary_key)
);

CREATE TABLE typeahead_entries (
    category TEXT NOT NULL,
    position INT NOT NULL,
    search_term TEXT NOT NULL,
    result JSONB NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (category, position)
);
CREATE INDEX typeahead_entries_by_term ON typeahead_entries (category, search_term text_pattern_ops);
