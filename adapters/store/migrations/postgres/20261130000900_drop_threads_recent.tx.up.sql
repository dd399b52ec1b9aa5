-- threads_activity_idx orders a listing of threads by activity as threads_recent did, so
-- the older index only cost an entry on every send.
DROP INDEX IF EXISTS threads_recent;
