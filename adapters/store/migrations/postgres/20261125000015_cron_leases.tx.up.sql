-- Cron runs carry a lease. The scheduler that claims a run owns it until
-- lease_until and renews it while the run waits for its slot and while its
-- call is in flight; once a lease has expired (its replica died) another
-- scheduler takes the run over. call_started_at is committed on its own
-- right before the HTTP call, so a taken-over run tells a call that never
-- started (made now, as attempt one) from one that was cut off (retried
-- once with the same Idempotency-Key, counted in interrupted_attempts).
-- Times are unix microseconds, as in the rest of the cron tables.
ALTER TABLE cron_executions ADD COLUMN lease_owner TEXT;
ALTER TABLE cron_executions ADD COLUMN lease_until BIGINT;
ALTER TABLE cron_executions ADD COLUMN call_started_at BIGINT;
ALTER TABLE cron_executions ADD COLUMN interrupted_attempts INTEGER NOT NULL DEFAULT 0;
-- Runs claimed before leases existed may have been called: they expire at
-- their old deadline and are recorded failed, never called again.
UPDATE cron_executions SET lease_owner = '', lease_until = COALESCE(deadline, started_at),
    call_started_at = started_at, interrupted_attempts = 1
    WHERE status = 'running';
DROP INDEX cron_executions_running;
-- Expired leases to take over.
CREATE INDEX cron_executions_lease ON cron_executions (lease_until) WHERE status = 'running';
