-- Every To recipient of an email with its display name, as a JSON array
-- of objects (name, address); to_address keeps the first address. An
-- email with one recipient and no name may keep an empty array.
ALTER TABLE emails ADD COLUMN to_list TEXT NOT NULL DEFAULT '[]';

-- A thread reads its emails oldest first.
CREATE INDEX emails_thread_idx ON emails (account_id, thread_id, created_at, id);

-- A message the sandbox route delivered, which no server sent.
ALTER TABLE email_spool ADD COLUMN simulated BOOLEAN NOT NULL DEFAULT false;
