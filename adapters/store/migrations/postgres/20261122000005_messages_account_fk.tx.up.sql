-- A message already belongs to its account through its thread (deleted with
-- it), and the use cases keep the two equal. The direct foreign key made
-- every send lock the account row, which concurrent sends of one account
-- then share as multixacts: a hot spot for no protection.
ALTER TABLE messages DROP CONSTRAINT messages_account_id_fkey;
