-- Outbound email. Addresses live in email_addresses (migration 1).
-- No foreign key to accounts: like messages (migration 5), a direct key
-- would make every send lock the account row, which concurrent sends of one
-- account then share; the use cases write the account of the sender address.
-- cc, bcc, reply_to and headers are JSON arrays.
CREATE TABLE emails (
    id             TEXT PRIMARY KEY,
    account_id     TEXT NOT NULL,
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
    created_at     TIMESTAMPTZ NOT NULL,
    updated_at     TIMESTAMPTZ NOT NULL,
    sent_at        TIMESTAMPTZ
);
