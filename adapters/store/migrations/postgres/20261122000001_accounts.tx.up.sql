-- Tenancy: accounts, their API credentials, agent numbers, email domains and addresses.
CREATE TABLE accounts (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    -- version changes with every change to the account or what it owns
    -- (numbers, domains, email addresses), in the same transaction, so a
    -- reader can tell from one row whether its cached copy is current.
    version    BIGINT NOT NULL DEFAULT 0,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);

-- Only keyed hashes of keys and secrets are stored; key_hash is the lookup index.
CREATE TABLE credentials (
    id          TEXT PRIMARY KEY,
    account_id  TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    label       TEXT NOT NULL,
    key_prefix  TEXT NOT NULL,
    key_hash    BYTEA NOT NULL UNIQUE,
    secret_hash BYTEA NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL,
    revoked_at  TIMESTAMPTZ
);
CREATE INDEX credentials_account_idx ON credentials (account_id);

-- An agent number belongs to one account per service.
CREATE TABLE numbers (
    id              TEXT PRIMARY KEY,
    account_id      TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    number          TEXT NOT NULL,
    service         TEXT NOT NULL,
    provider        TEXT NOT NULL,
    sealed_settings BYTEA NOT NULL,
    enabled         BOOLEAN NOT NULL,
    created_at      TIMESTAMPTZ NOT NULL,
    UNIQUE (service, number)
);
CREATE INDEX numbers_account_idx ON numbers (account_id);

CREATE TABLE domains (
    id         TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name       TEXT NOT NULL UNIQUE,
    created_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX domains_account_idx ON domains (account_id);

CREATE TABLE email_addresses (
    id         TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    local_part TEXT NOT NULL,
    domain     TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    UNIQUE (local_part, domain)
);
CREATE INDEX email_addresses_account_idx ON email_addresses (account_id);

CREATE FUNCTION touch_account() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        UPDATE accounts SET version = version + 1 WHERE id = OLD.account_id;
    ELSE
        UPDATE accounts SET version = version + 1 WHERE id = NEW.account_id;
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER numbers_touch_account AFTER INSERT OR UPDATE OR DELETE ON numbers
    FOR EACH ROW EXECUTE FUNCTION touch_account();
CREATE TRIGGER domains_touch_account AFTER INSERT OR UPDATE OR DELETE ON domains
    FOR EACH ROW EXECUTE FUNCTION touch_account();
CREATE TRIGGER email_addresses_touch_account AFTER INSERT OR UPDATE OR DELETE ON email_addresses
    FOR EACH ROW EXECUTE FUNCTION touch_account();
