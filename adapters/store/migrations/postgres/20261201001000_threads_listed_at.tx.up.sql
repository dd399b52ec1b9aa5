-- Thread listings are ordered by activity: the last message, or the
-- creation of a thread that has none yet. An index on that value
-- (threads_activity_idx) changed with every message, so no update of a
-- thread could be a HOT update (a new row version on the same page, no
-- index entry): each message added a row version and an entry to every
-- index of threads, kept until a vacuum.
--
-- listed_at is a floor of the activity that moves only when the activity
-- leaves [listed_at, listed_at + 1 minute]; listings read the index on it
-- and then order the rows they read by the activity itself. A thread with
-- messages less than a minute apart is updated in place, and its indexes
-- take no entry. The triggers keep listed_at for every writer (this build
-- and the one before it, which does not know the column). SQLite updates
-- rows in place and keeps its index on the activity itself.
ALTER TABLE threads ADD COLUMN listed_at TIMESTAMPTZ;
UPDATE threads SET listed_at = COALESCE(last_message_at, created_at);
ALTER TABLE threads ALTER COLUMN listed_at SET NOT NULL;

CREATE FUNCTION threads_listed_at() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.listed_at := COALESCE(NEW.last_message_at, NEW.created_at);
    RETURN NEW;
END
$$;
CREATE TRIGGER threads_listed_at_insert BEFORE INSERT ON threads
    FOR EACH ROW EXECUTE FUNCTION threads_listed_at();
-- The condition is evaluated without calling the function: most updates
-- leave listed_at as it is.
CREATE TRIGGER threads_listed_at_update BEFORE UPDATE ON threads
    FOR EACH ROW WHEN (COALESCE(NEW.last_message_at, NEW.created_at) < OLD.listed_at
        OR COALESCE(NEW.last_message_at, NEW.created_at) > OLD.listed_at + INTERVAL '1 minute')
    EXECUTE FUNCTION threads_listed_at();

-- The index on listed_at is built by the next migration (CONCURRENTLY),
-- and the one on the activity dropped by the one after it.
-- Room on each page for the next version of its rows, so that an update
-- stays on its page (pages written from now on).
ALTER TABLE threads SET (fillfactor = 90);
