-- The A1Cron model of a cron job, over the same jobs as the interface s
-- routes. origin is the API a job was made through (empty: the interface s
-- routes; a1cron: the A1Cron routes, whose jobs may use PATCH and run
-- hourly). A job is described by a name, a description and tags (kept as
-- ",a,b," so that a tag filter is a LIKE on both databases); a call may
-- carry a text body sent verbatim (text_body, else the JSON body) and
-- retry after a delay of its own (retry_delay_ms, 0: the scheduler s
-- backoff); success_url and failure_url are called back after each run.
ALTER TABLE cron_jobs ADD COLUMN origin TEXT NOT NULL DEFAULT '';
ALTER TABLE cron_jobs ADD COLUMN name TEXT NOT NULL DEFAULT '';
ALTER TABLE cron_jobs ADD COLUMN description TEXT NOT NULL DEFAULT '';
ALTER TABLE cron_jobs ADD COLUMN tags TEXT NOT NULL DEFAULT '';
ALTER TABLE cron_jobs ADD COLUMN text_body TEXT;
ALTER TABLE cron_jobs ADD COLUMN retry_delay_ms BIGINT NOT NULL DEFAULT 0;
ALTER TABLE cron_jobs ADD COLUMN success_url TEXT NOT NULL DEFAULT '';
ALTER TABLE cron_jobs ADD COLUMN failure_url TEXT NOT NULL DEFAULT '';
-- The schedule s interval: every repeat_every hours, days, weeks or months
-- counted from start_date (YYYY-MM-DD in the job s zone; 0 is every one),
-- on the days_of_week of weekly jobs (comma-separated, 0 is Sunday), until
-- end_at (unix microseconds) or until runs, the scheduled runs made since
-- the schedule was set, reaches max_runs (0: no limit).
ALTER TABLE cron_jobs ADD COLUMN repeat_every INTEGER NOT NULL DEFAULT 0;
ALTER TABLE cron_jobs ADD COLUMN days_of_week TEXT NOT NULL DEFAULT '';
ALTER TABLE cron_jobs ADD COLUMN start_date TEXT NOT NULL DEFAULT '';
ALTER TABLE cron_jobs ADD COLUMN end_at BIGINT;
ALTER TABLE cron_jobs ADD COLUMN max_runs INTEGER NOT NULL DEFAULT 0;
ALTER TABLE cron_jobs ADD COLUMN runs INTEGER NOT NULL DEFAULT 0;
-- A run whose last call got no complete answer within the job s timeout.
ALTER TABLE cron_executions ADD COLUMN timed_out BOOLEAN NOT NULL DEFAULT FALSE;
