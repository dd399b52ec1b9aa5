-- No query reads events by thread: polling and webhooks read them by
-- account and sequence (events_account), replays by id. Every send, inbound
-- message and status change appends an event, and the unused index cost
-- each of those one more index entry.
DROP INDEX IF EXISTS events_thread;
