-- rackboot CMDB on PostgreSQL, schema 10: boot tokens (the hashes of the per-boot and per-install
-- secrets in answer-file and cloud-init seed URLs), keyed by use << 48 | MAC.
CREATE TABLE boot_tokens (k bigint PRIMARY KEY, v json NOT NULL);
