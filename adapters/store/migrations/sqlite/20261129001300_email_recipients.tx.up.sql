-- Every To recipient of an email with its display name, as a JSON array
-- of objects (name, address); to_address keeps the first address. An
-- email with one recipient and no name may keep an empty array.
ALTER TABLE emails ADD COLUMN to_list TEXT NOT NULL DEFAULT '[]';
