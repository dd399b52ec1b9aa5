-- Replies: the message a message quotes (its id, or the provider's id of
-- a message Switchboard does not have) and the quoted text.
ALTER TABLE messages ADD COLUMN reply_to_message_id TEXT NOT NULL DEFAULT '';
ALTER TABLE messages ADD COLUMN reply_to_provider_id TEXT NOT NULL DEFAULT '';
ALTER TABLE messages ADD COLUMN quoted_text TEXT NOT NULL DEFAULT '';
-- Reactions: the current emoji of each reactor on a message; a reaction
-- taken back keeps its row with an empty emoji. A reaction to a message
-- Switchboard does not have is an event only. Like messages, the rows
-- have no foreign keys: the use cases write them for messages that exist.
CREATE TABLE message_reactions (
    message_id   TEXT NOT NULL,
    reactor      TEXT NOT NULL,
    account_id   TEXT NOT NULL,
    thread_id    TEXT NOT NULL,
    reactor_name TEXT NOT NULL DEFAULT '',
    from_agent   BOOLEAN NOT NULL,
    emoji        TEXT NOT NULL,
    updated_at   TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (message_id, reactor)
);
