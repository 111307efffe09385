-- The message catalog's version: a replica caches each message name's retrieval expressions
-- and start trigger with the version it read them at, and the correlation lookup checks that
-- version in the same statement (`workflow_catalog_is`), so that a model uploaded through
-- another replica is never missed: a stale version fails the transaction, which runs again
-- with the catalog read afresh.
CREATE TABLE message_catalog_version (
    one     boolean PRIMARY KEY DEFAULT true CHECK (one),
    version bigint NOT NULL
);
INSERT INTO message_catalog_version (one, version) VALUES (true, 1);

CREATE FUNCTION bump_message_catalog_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE message_catalog_version SET version = version + 1;
    RETURN NULL;
END
$$;

CREATE TRIGGER correlation_retrievals_bump_catalog
    AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON correlation_retrievals
    FOR EACH STATEMENT EXECUTE FUNCTION bump_message_catalog_version();
CREATE TRIGGER message_triggers_bump_catalog
    AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON message_triggers
    FOR EACH STATEMENT EXECUTE FUNCTION bump_message_catalog_version();

-- True when the catalog is at `expected` (or nothing is expected); else raises WFCAT.
CREATE FUNCTION workflow_catalog_is(expected bigint) RETURNS boolean LANGUAGE plpgsql STABLE AS $$
BEGIN
    IF expected IS NOT NULL
       AND expected IS DISTINCT FROM (SELECT version FROM message_catalog_version) THEN
        RAISE EXCEPTION 'the message catalog changed (a model was uploaded or deleted)'
            USING ERRCODE = 'WFCAT';
    END IF;
    RETURN true;
END
$$;
