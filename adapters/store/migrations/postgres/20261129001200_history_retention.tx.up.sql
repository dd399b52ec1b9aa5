-- History retention. history_retention_days is an account s own period
-- for its history (events, webhook deliveries and their attempts, cron
-- executions, the sandbox mailbox); 0 follows the server s setting.
ALTER TABLE accounts ADD COLUMN history_retention_days INTEGER NOT NULL DEFAULT 0;

-- The pruner deletes an event only once no delivery refers to it: one
-- probe of this index per event.
CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id);

-- An account s oldest cron executions, which the pruner deletes first.
CREATE INDEX cron_executions_account_started ON cron_executions (account_id, started_at);
