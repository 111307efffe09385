-- Tasks and connector jobs are written by every step of every instance, and each row inserted
-- under a foreign key to its instance paid a check of its own: a statement that locks the
-- instance's row (`FOR KEY SHARE`), which on a row this transaction inserted is a write with a
-- WAL record of its own: 5-10% of Postgres's time per message, 60 bytes of WAL (docs/perf,
-- sixteenth round). The keys guarded nothing the write-back does not: it inserts an instance's row
-- before its tasks and jobs, in the same statement, or writes them while it holds the
-- instance's lock; and the service never deletes an instance, so their cascade never ran. A
-- delete of instances made by hand deletes their tasks and jobs itself (docs/operating.md).
ALTER TABLE tasks DROP CONSTRAINT IF EXISTS tasks_process_instance_id_fkey;
ALTER TABLE jobs DROP CONSTRAINT IF EXISTS jobs_process_instance_id_fkey;
