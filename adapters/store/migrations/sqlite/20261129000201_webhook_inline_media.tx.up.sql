-- Inline media: the largest media of a message.received that a delivery
-- carries as base64 data (0: none).
ALTER TABLE webhook_endpoints ADD COLUMN inline_media_max_bytes BIGINT NOT NULL DEFAULT 0;
