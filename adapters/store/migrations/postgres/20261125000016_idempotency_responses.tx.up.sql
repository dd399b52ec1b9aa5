-- The answers of Idempotency-Key requests, one per key, apart from the
-- claims in idempotency_keys: a send writes its answer in the transaction
-- that stores the message, and the primary key fails that transaction when
-- another request holding the same key answered first, so one key never
-- commits two messages.
CREATE TABLE idempotency_responses (
    account_id  TEXT NOT NULL,
    key         TEXT NOT NULL,
    status_code INTEGER NOT NULL,
    body        BYTEA NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (account_id, key)
);

INSERT INTO idempotency_responses (account_id, key, status_code, body, created_at)
SELECT account_id, key, status_code, COALESCE(body, ''::bytea), created_at
FROM idempotency_keys WHERE status_code <> 0;

ALTER TABLE idempotency_keys DROP COLUMN status_code;
ALTER TABLE idempotency_keys DROP COLUMN body;
