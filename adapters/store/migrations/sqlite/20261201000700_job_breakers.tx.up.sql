-- The shared state of an endpoint that jobs call (jobs.endpoint_key), so
-- that every replica sees what one learned (adapters/jobs, fair.go):
--   failures      consecutive failed attempts while the breaker is closed;
--   opened_until  NULL while closed; else when the open breaker lets one
--                 probe through (database clock, unix microseconds);
--   openings      consecutive openings, for the growing open time;
--   probe_owner   the runner that took the probe, and probe_job its job: a
--                 probe runs while that job is running, and a breaker whose
--                 probe ended without an outcome (its process died) is
--                 half-open again;
--   stalled_at    set when a runner found none of its attempts answered for
--                 the stall time: every claim then bounds the endpoint to its
--                 limit, until an attempt answers.
-- A row with nothing to say is deleted.
CREATE TABLE job_breakers (
    endpoint_key TEXT PRIMARY KEY,
    failures     INTEGER NOT NULL DEFAULT 0,
    openings     INTEGER NOT NULL DEFAULT 0,
    opened_until BIGINT,
    probe_owner  TEXT,
    probe_job    BIGINT,
    stalled_at   BIGINT,
    updated_at   BIGINT NOT NULL
);
