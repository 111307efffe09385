-- Secrets that scripts read with get_secret(name) (SpiffArena's script function). Set with
-- `workflow-backend secret set NAME` or PUT /v1.0/secrets/{name}; no endpoint or command ever
-- shows a value. The name pattern and the value limits are checked by services::secrets.
CREATE TABLE secrets (
    -- byte order: lists come out in the same order whatever the database's locale
    name        text COLLATE "C" PRIMARY KEY,
    value       text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
