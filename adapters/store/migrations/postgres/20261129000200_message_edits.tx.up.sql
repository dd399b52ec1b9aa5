-- Edits and deletions users make: the text a message had before its
-- last edit, when it was last edited, and when it was deleted for
-- everyone (a deleted message keeps no content). NULL: never.
ALTER TABLE messages ADD COLUMN previous_text TEXT NOT NULL DEFAULT '';
ALTER TABLE messages ADD COLUMN edited_at TIMESTAMPTZ;
ALTER TABLE messages ADD COLUMN deleted_at TIMESTAMPTZ;
