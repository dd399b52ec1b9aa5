-- A claim counts the running jobs of every account (of the claiming runner
-- kinds) and of every bounded endpoint in the whole cluster, so that an
-- account share and an endpoint limit hold across replicas
-- (adapters/store/jobs.go). Running jobs are few (at most the workers of
-- every replica), and these indexes hold only them.
CREATE INDEX jobs_running_account ON jobs (account_id, kind) WHERE state = 'running';
CREATE INDEX jobs_running_endpoint ON jobs (endpoint_key) WHERE state = 'running' AND endpoint_key IS NOT NULL;
