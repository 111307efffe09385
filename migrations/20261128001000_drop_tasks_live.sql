-- `tasks_live` served the load of an instance's live tasks, which the instance row holds since
-- `live_tasks` (20261125000200): no statement reads it any more. Kept, it cost every task row
-- an index entry, and made every change of a task's state a non-HOT update (the state is in
-- its predicate), which wrote a new entry in each of the table's indexes.
DROP INDEX tasks_live;
