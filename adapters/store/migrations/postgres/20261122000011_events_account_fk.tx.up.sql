-- Every send, inbound message and status change appends an event, and the
-- foreign key to accounts made each of those inserts probe and share-lock
-- the account row: concurrent batches of one account then share it as
-- multixacts, the hot spot migration 5 removed from messages. Accounts are
-- never deleted by the service, and the use cases write the account of the
-- change the event records, so the key protected nothing.
ALTER TABLE events DROP CONSTRAINT events_account_id_fkey;
