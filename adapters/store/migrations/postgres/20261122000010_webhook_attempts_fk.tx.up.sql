-- Attempts are appended only for deliveries the runner has just read, and
-- deliveries are never deleted on their own. The foreign key made every
-- logged attempt probe and share-lock its delivery row, in the same batch
-- that then updates that row: work on the hottest path of webhook delivery
-- that protects nothing.
ALTER TABLE webhook_attempts DROP CONSTRAINT webhook_attempts_delivery_id_fkey;
