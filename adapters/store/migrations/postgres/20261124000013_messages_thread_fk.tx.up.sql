-- A message already belongs to its thread by the use cases that write it,
-- and threads are never deleted (they would go only with their account,
-- which the service never deletes). The foreign key made every message
-- insert run a referential check that share-locks the thread row: a WAL
-- record per send, and a multixact when two batches send into one thread,
-- for no protection. Migrations 5 and 11 removed the same cost for the
-- account keys of messages and events.
ALTER TABLE messages DROP CONSTRAINT messages_thread_id_fkey;
