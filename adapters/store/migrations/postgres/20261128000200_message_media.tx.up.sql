-- Media a user sent, kept at the provider: the provider's reference to
-- the file (a WhatsApp media id, a Telegram file_id), what the provider
-- said of it (type, name, size; empty or 0 when it said nothing) and its
-- variant (voice, sticker, or empty). The provider's URL is never kept.
ALTER TABLE messages ADD COLUMN media_ref TEXT NOT NULL DEFAULT '';
ALTER TABLE messages ADD COLUMN media_mime_type TEXT NOT NULL DEFAULT '';
ALTER TABLE messages ADD COLUMN media_file_name TEXT NOT NULL DEFAULT '';
ALTER TABLE messages ADD COLUMN media_size BIGINT NOT NULL DEFAULT 0;
ALTER TABLE messages ADD COLUMN media_variant TEXT NOT NULL DEFAULT '';
