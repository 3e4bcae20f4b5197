-- rackboot CMDB on PostgreSQL, schema 6: an index of each machine's runs (machine id, run id),
-- built from every stored run.
CREATE TABLE machine_runs (k1 bigint, k2 bigint, PRIMARY KEY (k1, k2));
INSERT INTO machine_runs (k1, k2)
  SELECT (v->>'machine_id')::bigint, k FROM runs WHERE v->>'machine_id' IS NOT NULL
  ON CONFLICT DO NOTHING;
