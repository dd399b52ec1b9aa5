-- Reply buttons: the buttons an agent message offers, as a JSON array of
-- objects with id and title (empty for none), and the id of the button a
-- user pressed (a button_reply message; its title is the body).
ALTER TABLE messages ADD COLUMN buttons TEXT NOT NULL DEFAULT '';
ALTER TABLE messages ADD COLUMN button_id TEXT NOT NULL DEFAULT '';
