-- The console lists an account's emails newest first (paged by creation
-- time and id).
CREATE INDEX emails_account_idx ON emails (account_id, created_at, id);
