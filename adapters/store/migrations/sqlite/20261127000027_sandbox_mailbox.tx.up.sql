-- The sandbox mailbox: the emails the sandbox Sender kept instead of
-- sending them (no SMTP relay configured), shared by every replica.
-- An attachment is described (name, type, size, SHA-256); its bytes are
-- never stored. seq is the order of keeping: the newest email has the
-- highest (a rowid, one above the highest left). cc, bcc, reply_to and
-- headers are JSON arrays; the date is microseconds since the epoch.
-- size is what the email counts against the byte bounds
-- (application/email KeptEmail.Size).
CREATE TABLE sandbox_emails (
    seq               INTEGER PRIMARY KEY,
    account_id        TEXT NOT NULL,
    message_id        TEXT NOT NULL,
    from_address      TEXT NOT NULL,
    to_address        TEXT NOT NULL,
    cc                TEXT NOT NULL,
    bcc               TEXT NOT NULL,
    reply_to          TEXT NOT NULL,
    subject           TEXT NOT NULL,
    text_part         TEXT NOT NULL,
    html_part         TEXT NOT NULL,
    headers           TEXT NOT NULL,
    attachment_name   TEXT,
    attachment_type   TEXT,
    attachment_size   INTEGER,
    attachment_sha256 TEXT,
    date              INTEGER NOT NULL,
    size              INTEGER NOT NULL
);
-- An account's emails, newest first, and its oldest to remove.
CREATE INDEX sandbox_emails_account_idx ON sandbox_emails (account_id, seq);
-- What each account holds, kept with every keep and removal: the bounds
-- are checked without counting rows, and the account holding the most is
-- one index probe away.
CREATE TABLE sandbox_mailbox_usage (
    account_id TEXT PRIMARY KEY,
    emails     INTEGER NOT NULL,
    bytes      INTEGER NOT NULL
);
CREATE INDEX sandbox_mailbox_usage_emails_idx ON sandbox_mailbox_usage (emails);
CREATE INDEX sandbox_mailbox_usage_bytes_idx ON sandbox_mailbox_usage (bytes);
-- What the mailbox holds in all, in its one row (SQLite's one writer runs
-- the keeps one after another).
CREATE TABLE sandbox_mailbox_totals (
    id     INTEGER PRIMARY KEY CHECK (id = 1),
    emails INTEGER NOT NULL,
    bytes  INTEGER NOT NULL
);
INSERT INTO sandbox_mailbox_totals (id, emails, bytes) VALUES (1, 0, 0);
