-- Group state on group threads, and the account event log.
ALTER TABLE threads ADD COLUMN description TEXT NOT NULL DEFAULT '';
ALTER TABLE threads ADD COLUMN picture_url TEXT NOT NULL DEFAULT '';
ALTER TABLE threads ADD COLUMN invite_code TEXT;
ALTER TABLE threads ADD COLUMN announcement BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE threads ADD COLUMN locked BOOLEAN NOT NULL DEFAULT FALSE;
CREATE UNIQUE INDEX threads_invite_code ON threads (invite_code) WHERE invite_code IS NOT NULL;

-- Every event of an account, in order: what webhooks deliver and polling
-- clients read. seq orders them; id is the public event id.
CREATE TABLE events (
    seq        BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id         TEXT NOT NULL UNIQUE,
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    type       TEXT NOT NULL,
    thread_id  TEXT,
    payload    TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX events_account ON events (account_id, seq);
CREATE INDEX events_thread ON events (thread_id, seq);
