-- Outbound email. Addresses live in email_addresses (migration 1).
-- Deleted with their account. cc, bcc, reply_to and headers are JSON arrays.
CREATE TABLE emails (
    id             TEXT PRIMARY KEY,
    account_id     TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    from_address   TEXT NOT NULL,
    to_address     TEXT NOT NULL,
    cc             TEXT NOT NULL,
    bcc            TEXT NOT NULL,
    reply_to       TEXT NOT NULL,
    subject        TEXT NOT NULL,
    body           TEXT NOT NULL,
    html           BOOLEAN NOT NULL,
    headers        TEXT NOT NULL,
    attachment_uri TEXT NOT NULL,
    message_id     TEXT NOT NULL,
    status         TEXT NOT NULL,
    reply          TEXT NOT NULL,
    failure_code   TEXT NOT NULL,
    attempts       INTEGER NOT NULL,
    created_at     TIMESTAMP NOT NULL,
    updated_at     TIMESTAMP NOT NULL,
    sent_at        TIMESTAMP
);
