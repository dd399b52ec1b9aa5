-- Replicas look for keys revoked lately, to forget them from their
-- authentication caches within a second: revoked keys only are indexed.
CREATE INDEX credentials_revoked_idx ON credentials (revoked_at) WHERE revoked_at IS NOT NULL;
