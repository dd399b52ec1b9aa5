-- Contacts: one person of an account, whichever channels and numbers they
-- write from. phones is a JSON array of E.164 numbers; the other ids are
-- empty where unknown. (The contacts table keeps, per service address,
-- when a user last wrote.)
CREATE TABLE people (
    id                TEXT PRIMARY KEY,
    account_id        TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name              TEXT NOT NULL DEFAULT '',
    phones            TEXT NOT NULL DEFAULT '[]',
    whatsapp_user_id  TEXT NOT NULL DEFAULT '',
    whatsapp_username TEXT NOT NULL DEFAULT '',
    telegram_user_id  TEXT NOT NULL DEFAULT '',
    telegram_username TEXT NOT NULL DEFAULT '',
    created_at        TIMESTAMP NOT NULL,
    updated_at        TIMESTAMP NOT NULL
);
CREATE INDEX people_recent ON people (account_id, created_at DESC, id DESC);
CREATE INDEX people_whatsapp_user ON people (account_id, whatsapp_user_id) WHERE whatsapp_user_id <> '';
CREATE INDEX people_telegram_user ON people (account_id, telegram_user_id) WHERE telegram_user_id <> '';

-- The contact of the user of an individual thread, and of its messages.
ALTER TABLE threads ADD COLUMN contact_id TEXT;
CREATE INDEX threads_contact ON threads (contact_id) WHERE contact_id IS NOT NULL;
ALTER TABLE messages ADD COLUMN contact_id TEXT NOT NULL DEFAULT '';

-- Every individual thread of today gets a contact, one per account and
-- user address: each thread first names a contact id of its own (its id
-- with the con_ prefix), then takes the smallest of its user.
UPDATE threads SET contact_id = 'con_' || substr(id, 5) WHERE type = 'individual';
UPDATE threads SET contact_id = (
    SELECT min(o.contact_id) FROM threads AS o
    WHERE o.type = 'individual' AND o.account_id = threads.account_id AND o.contact = threads.contact
) WHERE type = 'individual';
INSERT INTO people (id, account_id, name, phones, whatsapp_user_id, telegram_user_id, created_at, updated_at)
SELECT t.contact_id, min(t.account_id), max(t.name),
    CASE WHEN min(t.contact) LIKE '+%' THEN '["' || min(t.contact) || '"]' ELSE '[]' END,
    CASE WHEN min(t.service) = 'whatsapp' AND min(t.contact) NOT LIKE '+%' AND min(t.contact) <> 'unknown' THEN min(t.contact) ELSE '' END,
    CASE WHEN min(t.service) = 'telegram' AND min(t.contact) NOT LIKE '+%' AND min(t.contact) NOT LIKE '-%' AND min(t.contact) NOT LIKE '@%' THEN min(t.contact) ELSE '' END,
    min(t.created_at), max(t.updated_at)
FROM threads AS t
WHERE t.type = 'individual'
GROUP BY t.contact_id;
UPDATE messages SET contact_id = (SELECT t.contact_id FROM threads AS t WHERE t.id = messages.thread_id)
WHERE thread_id IN (SELECT id FROM threads WHERE type = 'individual');
