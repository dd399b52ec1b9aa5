-- Every job runner (a pool of workers of one process: its queue jobs, or its
-- cron runs) says here that it lives and how many workers it has, every
-- second, on the database clock (unix microseconds): an account share is a
-- share of the workers of every live runner of the pool. A runner whose
-- heartbeat is older than a few seconds counts no more. account_after is
-- where the runner claims resume visiting the accounts with pending jobs
-- when there are more than one claim visits. Unlogged: a row lost in a
-- crash is written again within a second.
CREATE UNLOGGED TABLE job_runners (
    worker        TEXT NOT NULL,
    pool          TEXT NOT NULL,
    workers       INTEGER NOT NULL,
    heartbeat_at  BIGINT NOT NULL,
    account_after TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (worker, pool)
);
