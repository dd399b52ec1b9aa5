-- Received email beside sent email. direction is outbound or inbound;
-- mailbox is the account address an email belongs to (the sender of a
-- sent one, the receiving address of a received one); thread_id groups
-- the emails of one conversation; subject_key is the subject without
-- reply prefixes, which finds a thread when no header links one.
-- references_ids is a JSON array of Message-IDs; auth a JSON object of
-- the SPF, DKIM and DMARC results; raw_id names the spooled message.
ALTER TABLE emails ADD COLUMN direction TEXT NOT NULL DEFAULT 'outbound';
ALTER TABLE emails ADD COLUMN mailbox TEXT NOT NULL DEFAULT '';
ALTER TABLE emails ADD COLUMN thread_id TEXT NOT NULL DEFAULT '';
ALTER TABLE emails ADD COLUMN from_name TEXT NOT NULL DEFAULT '';
ALTER TABLE emails ADD COLUMN in_reply_to TEXT NOT NULL DEFAULT '';
ALTER TABLE emails ADD COLUMN references_ids TEXT NOT NULL DEFAULT '[]';
ALTER TABLE emails ADD COLUMN subject_key TEXT NOT NULL DEFAULT '';
ALTER TABLE emails ADD COLUMN html_body TEXT NOT NULL DEFAULT '';
ALTER TABLE emails ADD COLUMN extracted_text TEXT NOT NULL DEFAULT '';
ALTER TABLE emails ADD COLUMN auth TEXT NOT NULL DEFAULT '{}';
ALTER TABLE emails ADD COLUMN raw_id TEXT NOT NULL DEFAULT '';
ALTER TABLE emails ADD COLUMN size BIGINT NOT NULL DEFAULT 0;
ALTER TABLE emails ADD COLUMN parse_problem TEXT NOT NULL DEFAULT '';

-- Every email sent so far starts a conversation of its own.
UPDATE emails SET mailbox = lower(from_address), thread_id = 'eth_' || substr(id, 5), subject_key = lower(subject);

-- A mailbox lists newest first; a reply finds the email it answers by
-- Message-ID.
CREATE INDEX emails_mailbox_idx ON emails (account_id, mailbox, created_at, id);
CREATE INDEX emails_message_id_idx ON emails (account_id, message_id);

-- Messages the SMTP listener answered 250 to, kept whole: written before
-- the answer, parsed by a job afterwards. recipients is a JSON array of
-- accepted addresses with their accounts.
CREATE TABLE email_spool (
    id          TEXT PRIMARY KEY,
    remote_ip   TEXT NOT NULL,
    helo        TEXT NOT NULL,
    mail_from   TEXT NOT NULL,
    recipients  TEXT NOT NULL,
    raw         BYTEA NOT NULL,
    size        BIGINT NOT NULL,
    received_at TIMESTAMPTZ NOT NULL
);

-- Files received emails carry. content is empty when stored is false (a
-- cap dropped it); the other columns are kept either way.
CREATE TABLE email_attachments (
    id           TEXT PRIMARY KEY,
    email_id     TEXT NOT NULL,
    account_id   TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    content_type TEXT NOT NULL,
    content_id   TEXT NOT NULL,
    inline       BOOLEAN NOT NULL,
    size         BIGINT NOT NULL,
    sha256       TEXT NOT NULL,
    stored       BOOLEAN NOT NULL,
    content      BYTEA NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL
);
CREATE INDEX email_attachments_email ON email_attachments (email_id);
CREATE INDEX email_attachments_account ON email_attachments (account_id, stored);
