-- Groups a provider creates and runs (WhatsApp Cloud API groups): the
-- invite link people join with, and whether the provider has yet to
-- confirm the group it was asked to create.
ALTER TABLE threads ADD COLUMN invite_link TEXT NOT NULL DEFAULT '';
ALTER TABLE threads ADD COLUMN creating BOOLEAN NOT NULL DEFAULT FALSE;
