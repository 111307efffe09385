-- The GIN indexes of the instances' data and correlations (the console's search) take each
-- entry at once instead of through a pending list (`fastupdate`). With the list, the backend
-- whose insert overflowed it (4 MB) merged it into the index while its transaction held its
-- instances' locks: a stall of a few hundred milliseconds for that message and the others of
-- its batch (bench/flatness: a max of 270 ms in the runs that met it). Measured per message:
-- no cost beyond the noise, about 1 kB more WAL per start that leaves a waiting instance.
ALTER INDEX process_instances_data SET (fastupdate = off);
ALTER INDEX process_instances_correlations SET (fastupdate = off);
-- what the lists hold now goes into the indexes (a later vacuum would do it)
SELECT gin_clean_pending_list('process_instances_data');
SELECT gin_clean_pending_list('process_instances_correlations');
