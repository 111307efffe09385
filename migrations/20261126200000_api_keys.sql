-- API keys for machine clients: a prefixed random token shown once at creation; only its
-- SHA-256 is stored (the token has 240 random bits, so a fast hash is enough). A revoked key
-- stays listed; its name may then be given to a new key.
CREATE TABLE api_keys (
    id           bigserial PRIMARY KEY,
    name         text NOT NULL,
    key_hash     text NOT NULL UNIQUE,
    -- the token's first characters, to tell keys apart in listings
    prefix       text NOT NULL,
    scopes       text NOT NULL,
    created_by   text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz,
    revoked_at   timestamptz,
    -- recorded to the minute: at most one write a minute per key
    last_used_at timestamptz
);
CREATE UNIQUE INDEX api_keys_active_name ON api_keys (name) WHERE revoked_at IS NULL;
