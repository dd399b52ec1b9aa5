-- Real channels (Telegram Bot API, WhatsApp Cloud API): who is behind a
-- chat, which group chat is which group thread, and which provider updates
-- were already handled.

-- A Telegram chat id with the username and phone number a user showed the
-- bot, per agent number, so that a send may name any of them.
CREATE TABLE channel_contacts (
    number_id  TEXT NOT NULL REFERENCES numbers (id) ON DELETE CASCADE,
    chat_id    TEXT NOT NULL,
    username   TEXT NOT NULL DEFAULT '',
    phone      TEXT NOT NULL DEFAULT '',
    name       TEXT NOT NULL DEFAULT '',
    updated_at TIMESTAMP NOT NULL,
    PRIMARY KEY (number_id, chat_id)
);
CREATE INDEX channel_contacts_username ON channel_contacts (number_id, username) WHERE username <> '';
CREATE INDEX channel_contacts_phone ON channel_contacts (number_id, phone) WHERE phone <> '';

-- A provider group chat the agent number is in, and its group thread.
CREATE TABLE channel_chats (
    number_id  TEXT NOT NULL REFERENCES numbers (id) ON DELETE CASCADE,
    chat_id    TEXT NOT NULL,
    thread_id  TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    created_at TIMESTAMP NOT NULL,
    PRIMARY KEY (number_id, chat_id)
);
CREATE UNIQUE INDEX channel_chats_thread ON channel_chats (thread_id);

-- Provider updates already handled (Telegram update_id), so that a
-- webhook retry or a second poll stores nothing twice.
CREATE TABLE channel_updates (
    number_id  TEXT NOT NULL REFERENCES numbers (id) ON DELETE CASCADE,
    update_key TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    PRIMARY KEY (number_id, update_key)
);
CREATE INDEX channel_updates_created ON channel_updates (created_at);

-- A provider reports an inbound message once per id, whichever of its
-- retries arrives first: two deliveries racing each other cannot both
-- store it.
CREATE UNIQUE INDEX messages_inbound_provider_id ON messages (service, provider_message_id)
    WHERE direction = 'inbound' AND provider_message_id IS NOT NULL;
