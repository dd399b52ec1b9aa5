-- Every job names the account it works for and the endpoint it calls, so
-- that a runner can bound the workers one account and one endpoint hold
-- (adapters/jobs). The account is empty for jobs of no account, and for
-- jobs enqueued before this migration; the endpoint is NULL when none.
ALTER TABLE jobs ADD COLUMN account_id TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN endpoint_key TEXT;
-- A claim visits the accounts with pending jobs one index probe each and
-- takes each one's oldest due jobs from here (adapters/store/jobs.go).
CREATE INDEX jobs_due_account ON jobs (account_id, run_at, id) WHERE state IN ('available', 'retryable');
