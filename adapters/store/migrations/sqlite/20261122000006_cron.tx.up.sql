-- Cron jobs and their executions. Times are unix microseconds (BIGINT), as
-- in the job queue: the scheduler compares them on every claim.
CREATE TABLE cron_jobs (
    id              TEXT PRIMARY KEY,
    account_id      TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    endpoint_url    TEXT NOT NULL,
    method          TEXT NOT NULL,
    headers         TEXT NOT NULL DEFAULT '{}',
    body            TEXT,
    frequency       TEXT NOT NULL,
    time_of_day     TEXT NOT NULL DEFAULT '',
    timezone        TEXT NOT NULL,
    day_of_week     INTEGER,
    day_of_month    INTEGER,
    custom_schedule TEXT NOT NULL DEFAULT '',
    timeout_ms      BIGINT NOT NULL DEFAULT 0,
    retries         INTEGER NOT NULL DEFAULT 0,
    status          TEXT NOT NULL,
    next_run_at     BIGINT,
    version         BIGINT NOT NULL DEFAULT 0,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT
);
-- Listing an account s jobs, oldest first.
CREATE INDEX cron_jobs_account ON cron_jobs (account_id, created_at, id);
-- Due jobs, in order.
CREATE INDEX cron_jobs_due ON cron_jobs (next_run_at) WHERE status = 'active' AND next_run_at IS NOT NULL;

CREATE TABLE cron_executions (
    id               TEXT PRIMARY KEY,
    job_id           TEXT NOT NULL REFERENCES cron_jobs (id) ON DELETE CASCADE,
    account_id       TEXT NOT NULL,
    slot             BIGINT NOT NULL,
    started_at       BIGINT NOT NULL,
    status           TEXT NOT NULL,
    attempt          INTEGER NOT NULL DEFAULT 1,
    response_code    INTEGER NOT NULL DEFAULT 0,
    response_time_ms BIGINT NOT NULL DEFAULT 0,
    response_body    TEXT,
    error            TEXT NOT NULL DEFAULT '',
    deadline         BIGINT,
    retry_at         BIGINT,
    finished_at      BIGINT
);
-- Each scheduled slot of a job runs once, across every replica.
CREATE UNIQUE INDEX cron_executions_slot ON cron_executions (job_id, slot);
-- Abandoned runs to expire.
CREATE INDEX cron_executions_running ON cron_executions (deadline) WHERE status = 'running';
-- Retries that are due.
CREATE INDEX cron_executions_retrying ON cron_executions (retry_at) WHERE status = 'retrying';
