-- Tenancy: accounts, their API credentials, agent numbers, email domains and addresses.
CREATE TABLE accounts (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    -- version changes with every change to the account or what it owns
    -- (numbers, domains, email addresses), in the same transaction, so a
    -- reader can tell from one row whether its cached copy is current.
    version    BIGINT NOT NULL DEFAULT 0,
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

-- Keep accounts.version current; see the column.
CREATE TRIGGER numbers_insert_touch_account AFTER INSERT ON numbers BEGIN
    UPDATE accounts SET version = version + 1 WHERE id = NEW.account_id;
END;
CREATE TRIGGER numbers_update_touch_account AFTER UPDATE ON numbers BEGIN
    UPDATE accounts SET version = version + 1 WHERE id = NEW.account_id;
END;
CREATE TRIGGER numbers_delete_touch_account AFTER DELETE ON numbers BEGIN
    UPDATE accounts SET version = version + 1 WHERE id = OLD.account_id;
END;
CREATE TRIGGER domains_insert_touch_account AFTER INSERT ON domains BEGIN
    UPDATE accounts SET version = version + 1 WHERE id = NEW.account_id;
END;
CREATE TRIGGER domains_update_touch_account AFTER UPDATE ON domains BEGIN
    UPDATE accounts SET version = version + 1 WHERE id = NEW.account_id;
END;
CREATE TRIGGER domains_delete_touch_account AFTER DELETE ON domains BEGIN
    UPDATE accounts SET version = version + 1 WHERE id = OLD.account_id;
END;
CREATE TRIGGER email_addresses_insert_touch_account AFTER INSERT ON email_addresses BEGIN
    UPDATE accounts SET version = version + 1 WHERE id = NEW.account_id;
END;
CREATE TRIGGER email_addresses_update_touch_account AFTER UPDATE ON email_addresses BEGIN
    UPDATE accounts SET version = version + 1 WHERE id = NEW.account_id;
END;
CREATE TRIGGER email_addresses_delete_touch_account AFTER DELETE ON email_addresses BEGIN
    UPDATE accounts SET version = version + 1 WHERE id = OLD.account_id;
END;
