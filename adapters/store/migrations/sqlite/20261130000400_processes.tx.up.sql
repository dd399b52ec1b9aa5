-- Every process that runs background work registers here and holds an
-- exclusive flock on its lock file beside the database (PATH.process-ID.lock)
-- for as long as it lives. The kernel releases it the moment the process
-- dies: another process that can take the lock marks the row suspected_at
-- and rescues its work at once. Leases stay for a process that lives but
-- stalls. lock_key is the advisory lock key on Postgres, unused here. Times
-- are unix microseconds.
CREATE TABLE processes (
    id            TEXT PRIMARY KEY,
    lock_key      INTEGER NOT NULL DEFAULT 0,
    host          TEXT NOT NULL,
    pid           INTEGER NOT NULL,
    started_at    BIGINT NOT NULL,
    registered_at BIGINT NOT NULL,
    suspected_at  BIGINT
);

-- Runs of a job cut off by the death of their process since its last
-- recorded outcome, and when the last of them started. Such a run is no
-- failed attempt: its attempt is given back and the job runs again at once.
ALTER TABLE jobs ADD COLUMN interruptions INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN interrupted_at BIGINT;

-- An attempt cut off by the death of the process making it: no failure of
-- the endpoint, and not counted in the delivery attempts.
ALTER TABLE webhook_attempts ADD COLUMN interrupted BOOLEAN NOT NULL DEFAULT FALSE;
