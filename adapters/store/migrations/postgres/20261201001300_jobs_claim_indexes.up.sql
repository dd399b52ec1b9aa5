-- Each runner claims only its own kinds (the cron runner cron.run, the
-- other runner the rest), and a claim reads an account due jobs of one
-- kind at a time, so that a backlog of one kind costs nothing to the
-- claims and the next-job reads of another (adapters/store/claim.go).
-- The indexes on due work lead with the kind; the former ones, which
-- made a cron claim read past every pending message delivery, go. Built
-- CONCURRENTLY, one statement per chunk, outside a transaction
-- (docs/upgrading.md).
--
-- A claim reads an account jobs of a kind through jobs_due_account_kind.
-- Its plan is generic (prepared once), so Postgres chooses the index for
-- any account: with the jobs of one or two accounts in its statistics it
-- took jobs_due_kind and filtered by account, reading every pending job
-- of the kind to find none of an account with none. The statistics are
-- told that the queue holds the jobs of many accounts, which makes an
-- account one probe whatever the queue held when last analysed.
DROP INDEX CONCURRENTLY IF EXISTS jobs_due_kind;
--bun:split
CREATE INDEX CONCURRENTLY jobs_due_kind ON jobs (kind, run_at, id) WHERE state IN ('available', 'retryable');
--bun:split
DROP INDEX CONCURRENTLY IF EXISTS jobs_due_account_kind;
--bun:split
CREATE INDEX CONCURRENTLY jobs_due_account_kind ON jobs (account_id, kind, run_at, id) WHERE state IN ('available', 'retryable');
--bun:split
DROP INDEX CONCURRENTLY IF EXISTS jobs_due;
--bun:split
DROP INDEX CONCURRENTLY IF EXISTS jobs_due_account;
--bun:split
-- The running jobs are counted through jobs_leased, which holds only
-- them (at most the workers of every replica): the two indexes kept for
-- those counts took two more entries per claimed job, and dispatch lost
-- a tenth of its rate to them.
DROP INDEX CONCURRENTLY IF EXISTS jobs_running_account;
--bun:split
DROP INDEX CONCURRENTLY IF EXISTS jobs_running_endpoint;
--bun:split
ALTER TABLE jobs ALTER COLUMN account_id SET (n_distinct = -0.01);
--bun:split
ANALYZE jobs;
