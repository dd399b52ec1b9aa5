-- Customer webhooks: one endpoint per account, its deliveries (one per
-- event sent to it) and the log of every attempt. Secrets are sealed.
CREATE TABLE webhook_endpoints (
    account_id      TEXT PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
    url             TEXT NOT NULL,
    enabled         BOOLEAN NOT NULL,
    events          TEXT NOT NULL DEFAULT '',
    sealed_secret   BYTEA NOT NULL,
    sealed_previous BYTEA,
    previous_until  TIMESTAMPTZ,
    disabled_reason TEXT NOT NULL DEFAULT '',
    disabled_at     TIMESTAMPTZ,
    failing_since   TIMESTAMPTZ,
    created_at      TIMESTAMPTZ NOT NULL,
    updated_at      TIMESTAMPTZ NOT NULL
);

-- seq orders deliveries as their events were recorded; id is the
-- webhook-id every attempt carries.
CREATE TABLE webhook_deliveries (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id               TEXT NOT NULL UNIQUE,
    account_id       TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    -- The event is deleted only with its account, as the delivery is.
    event_id         TEXT NOT NULL,
    event_type       TEXT NOT NULL,
    thread_id        TEXT NOT NULL DEFAULT '',
    status           TEXT NOT NULL,
    attempts         INTEGER NOT NULL DEFAULT 0,
    last_status_code INTEGER NOT NULL DEFAULT 0,
    last_error       TEXT NOT NULL DEFAULT '',
    next_attempt_at  TIMESTAMPTZ NOT NULL,
    created_at       TIMESTAMPTZ NOT NULL,
    updated_at       TIMESTAMPTZ NOT NULL
);
CREATE INDEX webhook_deliveries_account ON webhook_deliveries (account_id, seq);
-- Deliveries still waiting for their first attempt, per thread: what keeps
-- the events of one thread in order.
CREATE INDEX webhook_deliveries_untried ON webhook_deliveries (account_id, thread_id, seq)
    WHERE status = 'pending' AND attempts = 0;

CREATE TABLE webhook_attempts (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    delivery_id  TEXT NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
    attempted_at TIMESTAMPTZ NOT NULL,
    status_code  INTEGER NOT NULL DEFAULT 0,
    latency_us   BIGINT NOT NULL,
    error        TEXT NOT NULL DEFAULT '',
    response     TEXT NOT NULL DEFAULT ''
);
CREATE INDEX webhook_attempts_delivery ON webhook_attempts (delivery_id, seq);
