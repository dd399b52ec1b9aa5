-- Message retention. message_retention_days is an account s own period for
-- its messages and emails (content, reactions, media links); 0 keeps them
-- (the default: off).
ALTER TABLE accounts ADD COLUMN message_retention_days INTEGER NOT NULL DEFAULT 0;

-- Erasures of people: who erased whom and what, without the content. The
-- person is known by the kind of identifier given and a keyed hash of it
-- (the same identifier erased again hashes alike); counts is a JSON object
-- of rows deleted per table.
CREATE TABLE erasures (
    id              TEXT PRIMARY KEY,
    account_id      TEXT NOT NULL,
    requested_by    TEXT NOT NULL,
    identifier_kind TEXT NOT NULL,
    identifier_hash TEXT NOT NULL,
    counts          TEXT NOT NULL DEFAULT '{}',
    created_at      TIMESTAMP NOT NULL
);
CREATE INDEX erasures_account ON erasures (account_id, created_at, id);
CREATE INDEX erasures_identifier ON erasures (account_id, identifier_hash);
