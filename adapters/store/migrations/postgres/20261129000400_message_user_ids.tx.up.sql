-- WhatsApp business-scoped user ids: the user id and username a provider
-- showed for the sender of an inbound message (empty where it showed none).
ALTER TABLE messages ADD COLUMN user_id TEXT NOT NULL DEFAULT '';
ALTER TABLE messages ADD COLUMN username TEXT NOT NULL DEFAULT '';
