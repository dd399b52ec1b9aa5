-- Every process that runs background work registers here and holds, on a
-- connection of its own, the session-level advisory lock (classid 1398227524,
-- objid lock_key) of its row for as long as it lives. Postgres releases the
-- lock the moment that connection ends: another process that finds the lock
-- free, and still free a grace period later (on the database clock, in
-- suspected_at), knows the process died and rescues its work at once.
-- Leases (jobs.lease_expires_at, cron_executions.lease_until) stay for a
-- process that lives but stalls. A process whose lock connection dropped (a
-- restart or failover of the database) takes its lock again and clears
-- suspected_at well within the grace period. Times are unix microseconds.
CREATE TABLE processes (
    id            TEXT PRIMARY KEY,
    lock_key      INTEGER GENERATED ALWAYS AS IDENTITY UNIQUE,
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
ALTER TABLE webhook_attempts ADD COLUMN interrupted BOOLEAN NOT NULL DEFAULT false;
