-- Message templates (WhatsApp): the templates of each agent number, as its
-- provider had them at the last sync, which replaces a number's whole set.
-- components is the JSON array of the template's header, body, footer and
-- buttons.
CREATE TABLE message_templates (
    number_id        TEXT NOT NULL REFERENCES numbers (id) ON DELETE CASCADE,
    name             TEXT NOT NULL,
    language         TEXT NOT NULL,
    account_id       TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    provider_id      TEXT NOT NULL DEFAULT '',
    status           TEXT NOT NULL,
    category         TEXT NOT NULL DEFAULT '',
    parameter_format TEXT NOT NULL DEFAULT '',
    components       TEXT NOT NULL DEFAULT '[]',
    synced_at        TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (number_id, name, language)
);
CREATE INDEX message_templates_account ON message_templates (account_id, name, language);

-- The template a template message sends, with its parameters, as JSON
-- (empty for other messages).
ALTER TABLE messages ADD COLUMN template TEXT NOT NULL DEFAULT '';
