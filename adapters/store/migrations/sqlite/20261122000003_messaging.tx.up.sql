-- Conversations: threads, their participants, messages and contacts.
CREATE TABLE threads (
    id              TEXT PRIMARY KEY,
    account_id      TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    service         TEXT NOT NULL,
    type            TEXT NOT NULL,
    agent_number    TEXT NOT NULL,
    contact         TEXT,
    name            TEXT NOT NULL DEFAULT '',
    last_inbound_at TIMESTAMP,
    last_message_at TIMESTAMP,
    created_at      TIMESTAMP NOT NULL,
    updated_at      TIMESTAMP NOT NULL
);
-- One individual thread per agent number and user on a service.
CREATE UNIQUE INDEX threads_individual ON threads (account_id, service, agent_number, contact) WHERE type = 'individual';
CREATE INDEX threads_recent ON threads (account_id, last_message_at DESC, id);

CREATE TABLE thread_participants (
    thread_id TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    address   TEXT NOT NULL,
    name      TEXT NOT NULL DEFAULT '',
    admin     BOOLEAN NOT NULL DEFAULT FALSE,
    is_agent  BOOLEAN NOT NULL DEFAULT FALSE,
    joined_at TIMESTAMP NOT NULL,
    PRIMARY KEY (thread_id, address)
);
CREATE INDEX thread_participants_address ON thread_participants (address);

CREATE TABLE messages (
    id                  TEXT PRIMARY KEY,
    account_id          TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    thread_id           TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    service             TEXT NOT NULL,
    direction           TEXT NOT NULL,
    from_address        TEXT NOT NULL,
    to_address          TEXT NOT NULL DEFAULT '',
    sender_name         TEXT NOT NULL DEFAULT '',
    kind                TEXT NOT NULL,
    body                TEXT NOT NULL DEFAULT '',
    media_url           TEXT NOT NULL DEFAULT '',
    caption             TEXT NOT NULL DEFAULT '',
    latitude            REAL NOT NULL DEFAULT 0,
    longitude           REAL NOT NULL DEFAULT 0,
    place_name          TEXT NOT NULL DEFAULT '',
    place_address       TEXT NOT NULL DEFAULT '',
    status              TEXT NOT NULL,
    failure_code        TEXT NOT NULL DEFAULT '',
    failure_text        TEXT NOT NULL DEFAULT '',
    provider_message_id TEXT,
    created_at          TIMESTAMP NOT NULL,
    updated_at          TIMESTAMP NOT NULL
);
CREATE INDEX messages_thread_recent ON messages (thread_id, created_at DESC, id DESC);
CREATE INDEX messages_provider_id ON messages (service, provider_message_id) WHERE provider_message_id IS NOT NULL;

CREATE TABLE contacts (
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    service    TEXT NOT NULL,
    address    TEXT NOT NULL,
    name       TEXT NOT NULL DEFAULT '',
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL,
    PRIMARY KEY (account_id, service, address)
);

-- Responses kept for Idempotency-Key replays (24 hours).
CREATE TABLE idempotency_keys (
    account_id   TEXT NOT NULL,
    key          TEXT NOT NULL,
    fingerprint  TEXT NOT NULL,
    status_code  INTEGER NOT NULL DEFAULT 0,
    body         BLOB,
    locked_until TIMESTAMP,
    created_at   TIMESTAMP NOT NULL,
    PRIMARY KEY (account_id, key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
