-- A claim counts the running jobs of every account (of the claiming runner
-- kinds) and of every bounded endpoint in the whole cluster, so that an
-- account share and an endpoint limit hold across replicas
-- (adapters/store/jobs.go). Running jobs are few (at most the workers of
-- every replica), and these indexes hold only them. Built CONCURRENTLY,
-- one statement per chunk, outside a transaction (docs/upgrading.md).
DROP INDEX CONCURRENTLY IF EXISTS jobs_running_account;
--bun:split
CREATE INDEX CONCURRENTLY jobs_running_account ON jobs (account_id, kind) WHERE state = 'running';
--bun:split
DROP INDEX CONCURRENTLY IF EXISTS jobs_running_endpoint;
--bun:split
CREATE INDEX CONCURRENTLY jobs_running_endpoint ON jobs (endpoint_key) WHERE state = 'running' AND endpoint_key IS NOT NULL;
