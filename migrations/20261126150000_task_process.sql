-- The process each task's element belongs to (a called process's tasks run inside their
-- caller's instance): the instance's task list shows its tree of calls.
ALTER TABLE tasks ADD COLUMN process_id text;
