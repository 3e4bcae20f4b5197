-- rackboot CMDB on PostgreSQL, schema 3: plugin bundles in the shared store.
--
-- The version records are in `plugins`; on a shared store each bundle's bytes are kept here
-- too, by SHA-256, so every appliance serves every stored version to its agents. An appliance
-- without the blob in <data_dir>/plugins/blobs fetches it from here (checking the hash) first.
CREATE TABLE plugin_blobs (
    sha256 text COLLATE "C" PRIMARY KEY CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    bytes bytea NOT NULL,
    -- Bytes no version names (a crash between the copy and the record) are removed by a
    -- later start once they are this old.
    added_at timestamptz NOT NULL DEFAULT now()
);
