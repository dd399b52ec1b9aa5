-- The display name and picture an agent number shows its users, as the
-- account last set them (empty when never set); profile_updated_at is when
-- either was last set, NULL when never.
ALTER TABLE numbers ADD COLUMN profile_name TEXT NOT NULL DEFAULT '';
ALTER TABLE numbers ADD COLUMN profile_picture_url TEXT NOT NULL DEFAULT '';
ALTER TABLE numbers ADD COLUMN profile_updated_at TIMESTAMPTZ;
