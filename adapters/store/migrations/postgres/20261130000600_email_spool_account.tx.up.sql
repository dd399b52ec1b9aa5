-- A spooled message belongs to the one account its recipients are
-- addresses of (the listener spools a message once per account), so that
-- it goes with its account. Messages spooled before keep the account of
-- their first recipient.
ALTER TABLE email_spool ADD COLUMN account_id TEXT NOT NULL DEFAULT '';
UPDATE email_spool SET account_id = COALESCE(recipients::jsonb -> 0 ->> 'account_id', '');
CREATE INDEX email_spool_account_idx ON email_spool (account_id);

-- Deleting an account deletes its email: the raw messages received, the
-- emails sent and received (their attachments go by their foreign key),
-- and what the sandbox mailbox kept of it, with its share of the totals.
-- emails and email_spool have no foreign key to accounts (see the emails
-- migration): a key would make every write lock the account row.
CREATE FUNCTION delete_account_email() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM email_spool WHERE account_id = OLD.id;
    DELETE FROM emails WHERE account_id = OLD.id;
    UPDATE sandbox_mailbox_totals AS t SET emails = t.emails - u.emails, bytes = t.bytes - u.bytes
        FROM sandbox_mailbox_usage AS u WHERE u.account_id = OLD.id;
    DELETE FROM sandbox_mailbox_usage WHERE account_id = OLD.id;
    DELETE FROM sandbox_emails WHERE account_id = OLD.id;
    RETURN NULL;
END
$$;
CREATE TRIGGER accounts_delete_email AFTER DELETE ON accounts
    FOR EACH ROW EXECUTE FUNCTION delete_account_email();

-- The email of accounts deleted before now.
DELETE FROM email_spool WHERE NOT EXISTS (SELECT 1 FROM accounts WHERE accounts.id = email_spool.account_id);
DELETE FROM emails WHERE NOT EXISTS (SELECT 1 FROM accounts WHERE accounts.id = emails.account_id);
