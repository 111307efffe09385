-- The message catalog's version is moved on by the statements that change the catalog (a
-- model's routing replaced, a model deleted: `store::models`), no longer by triggers: Citus
-- refuses to distribute a table that has triggers, and `correlation_retrievals` and
-- `message_triggers` are reference tables there (ADR 0014).
DROP TRIGGER correlation_retrievals_bump_catalog ON correlation_retrievals;
DROP TRIGGER message_triggers_bump_catalog ON message_triggers;
DROP FUNCTION bump_message_catalog_version();
