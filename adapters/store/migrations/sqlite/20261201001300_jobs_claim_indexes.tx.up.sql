-- Each runner claims only its own kinds (the cron runner cron.run, the
-- other runner the rest), and a claim reads an account due jobs of one
-- kind at a time, so that a backlog of one kind costs nothing to the
-- claims and the next-job reads of another (adapters/store/claim.go).
-- The indexes on due work lead with the kind.
CREATE INDEX jobs_due_kind ON jobs (kind, run_at, id) WHERE state IN ('available', 'retryable');
CREATE INDEX jobs_due_account_kind ON jobs (account_id, kind, run_at, id) WHERE state IN ('available', 'retryable');
DROP INDEX IF EXISTS jobs_due;
DROP INDEX IF EXISTS jobs_due_account;
-- The running jobs are counted through jobs_leased, which holds only
-- them (at most the workers of every replica): the two indexes kept for
-- those counts took two more entries per claimed job, and dispatch lost
-- a tenth of its rate to them.
DROP INDEX IF EXISTS jobs_running_account;
DROP INDEX IF EXISTS jobs_running_endpoint;
