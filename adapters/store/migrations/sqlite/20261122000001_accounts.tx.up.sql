-- Tenancy: accounts, their API credentials, agent numbers, email domains and addresses.
CREATE TABLE accounts (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL
);

-- Only keyed hashes of keys and secrets are stored; key_hash is the lookup index.
CREATE TABLE credentials (
    id          TEXT PRIMARY KEY,
    account_id  TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    label       TEXT NOT NULL,
    key_prefix  TEXT NOT NULL,
    key_hash    BLOB NOT NULL UNIQUE,
    secret_hash BLOB NOT NULL,
    created_at  TIMESTAMP NOT NULL,
    revoked_at  TIMESTAMP
);
CREATE INDEX credentials_account_idx ON credentials (account_id);

-- An agent number belongs to one account per service.
CREATE TABLE numbers (
    id              TEXT PRIMARY KEY,
    account_id      TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    number          TEXT NOT NULL,
    service         TEXT NOT NULL,
    provider        TEXT NOT NULL,
    sealed_settings BLOB NOT NULL,
    enabled         BOOLEAN NOT NULL,
    created_at      TIMESTAMP NOT NULL,
    UNIQUE (service, number)
);
CREATE INDEX numbers_account_idx ON numbers (account_id);

CREATE TABLE domains (
    id         TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name       TEXT NOT NULL UNIQUE,
    created_at TIMESTAMP NOT NULL
);
CREATE INDEX domains_account_idx ON domains (account_id);

CREATE TABLE email_addresses (
    id         TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    local_part TEXT NOT NULL,
    domain     TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    UNIQUE (local_part, domain)
);
CREATE INDEX email_addresses_account_idx ON email_addresses (account_id);
