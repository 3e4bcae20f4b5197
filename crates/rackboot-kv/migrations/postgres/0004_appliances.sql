-- rackboot CMDB on PostgreSQL, schema 4: the appliances of the estate.
--
-- Each appliance on this store beats here every few seconds (on the database's clock) with
-- where its API answers; any of them lists them all (GET /api/v1/appliances). An appliance not
-- seen for a week is dropped from the list.
CREATE TABLE appliances (
    id text COLLATE "C" PRIMARY KEY,
    hostname text NOT NULL,
    https_base text NOT NULL,
    version text NOT NULL,
    started_at timestamptz NOT NULL,
    beat_at timestamptz NOT NULL
);
