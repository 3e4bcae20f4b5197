-- rackboot CMDB on PostgreSQL, schema 1 (the embedded store's schema 10).
--
-- Each table mirrors one table of the embedded redb store: key columns k (or k1, k2), value
-- column v. Records are JSON documents (`json`: stored as written, readable with ->> in psql);
-- counters and ids are bigint. Text keys sort bytewise (COLLATE "C"), as the embedded store's.
-- Applied once, in one transaction, by the first appliance to start (schema_migrations).

-- Counters: next_machine_id, next_event_seq, next_job_id, next_audit_seq, markers.
-- The next_event_seq row is the writers' lock: every appliance's write batch takes it first.
CREATE TABLE meta (k text COLLATE "C" PRIMARY KEY, v bigint NOT NULL);
INSERT INTO meta (k, v) VALUES ('next_machine_id', 1), ('next_event_seq', 1), ('schema_version', 10);

CREATE TABLE machines (k bigint PRIMARY KEY, v json NOT NULL);
-- MAC (48 bits in a bigint) -> machine id.
CREATE TABLE macs (k bigint PRIMARY KEY, v bigint NOT NULL);
-- IPv4 address (as a number) -> its lease. The key is the address: one lease per address,
-- whichever appliance writes it.
CREATE TABLE leases (k bigint PRIMARY KEY CHECK (k BETWEEN 0 AND 4294967295), v json NOT NULL);
-- ...and an active, unexpired lease is never handed to another client, whichever appliance
-- asks: the batch fails (check_violation) and no ACK of it goes out. It has to be released,
-- declined or expired first. rackboot checks the same in the batch first (with a margin for
-- clock differences), so this is the backstop, not the rule clients meet.
CREATE FUNCTION leases_one_client() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.v->>'state' = 'active'
       AND (OLD.v->>'expires_at')::bigint > extract(epoch FROM now())
       AND OLD.v->>'mac' IS DISTINCT FROM NEW.v->>'mac' THEN
        RAISE EXCEPTION 'address % is leased to % until %, not to %',
            (OLD.k >> 24) || '.' || ((OLD.k >> 16) & 255) || '.' || ((OLD.k >> 8) & 255) || '.' || (OLD.k & 255),
            OLD.v->>'mac', to_timestamp((OLD.v->>'expires_at')::bigint), NEW.v->>'mac'
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER leases_one_client BEFORE UPDATE ON leases FOR EACH ROW EXECUTE FUNCTION leases_one_client();
-- (machine id, event sequence) -> event; event_log: sequence -> machine id, for the stream.
CREATE TABLE events (k1 bigint, k2 bigint, v json NOT NULL, PRIMARY KEY (k1, k2));
CREATE TABLE event_log (k bigint PRIMARY KEY, v bigint NOT NULL);
CREATE TABLE profiles (k text COLLATE "C" PRIMARY KEY, v json NOT NULL);
CREATE TABLE templates (k text COLLATE "C" PRIMARY KEY, v json NOT NULL);

CREATE TABLE agents (k bigint PRIMARY KEY, v json NOT NULL);
CREATE TABLE boot_nonces (k bigint PRIMARY KEY, v json NOT NULL);
CREATE TABLE jobs (k bigint PRIMARY KEY, v json NOT NULL);
-- (machine id, job id): every job, and the jobs not yet finished.
CREATE TABLE machine_jobs (k1 bigint, k2 bigint, PRIMARY KEY (k1, k2));
CREATE TABLE active_jobs (k1 bigint, k2 bigint, PRIMARY KEY (k1, k2));
-- (job id, attempt << 32 | chunk) -> output chunk.
CREATE TABLE job_output (k1 bigint, k2 bigint, v json NOT NULL, PRIMARY KEY (k1, k2));

CREATE TABLE tasks (k bigint PRIMARY KEY, v json NOT NULL);
CREATE TABLE runs (k bigint PRIMARY KEY, v json NOT NULL);
CREATE TABLE active_runs (k bigint PRIMARY KEY);

CREATE TABLE users (k text COLLATE "C" PRIMARY KEY, v json NOT NULL);
-- Token id -> token record (the secret is stored hashed).
CREATE TABLE tokens (k text COLLATE "C" PRIMARY KEY, v json NOT NULL);
CREATE TABLE audit (k bigint PRIMARY KEY, v json NOT NULL);

CREATE TABLE racks (k text COLLATE "C" PRIMARY KEY, v json NOT NULL);
CREATE TABLE plugin_keys (k text COLLATE "C" PRIMARY KEY, v json NOT NULL);
-- "name/version" -> plugin version; plugin_active: name -> active version.
CREATE TABLE plugins (k text COLLATE "C" PRIMARY KEY, v json NOT NULL);
CREATE TABLE plugin_active (k text COLLATE "C" PRIMARY KEY, v text NOT NULL);
-- Machine id -> its BMC (the password sealed with the appliance key).
CREATE TABLE bmcs (k bigint PRIMARY KEY, v json NOT NULL);
-- Records that did not decode: (table, key) -> the bytes as found.
CREATE TABLE quarantine (k1 text COLLATE "C", k2 bigint, v bytea NOT NULL, PRIMARY KEY (k1, k2));

-- What each write batch changed, in commit order (batches hold the writers' lock, so seq order
-- is commit order): the machines and leases other appliances re-read into their memory, and the
-- batch's events they publish to their event streams. Each commit also notifies channel
-- rackboot_cmdb with its seq. Kept for an hour; an appliance that falls further behind reloads.
CREATE TABLE changes (
    seq bigserial PRIMARY KEY,
    appliance text NOT NULL,
    machines bigint[] NOT NULL,
    leases bigint[] NOT NULL,
    racks boolean NOT NULL,
    events_from bigint,
    events_to bigint,
    at timestamptz NOT NULL DEFAULT now()
);

-- DHCP pairs (hot-standby, one per VLAN): each member beats here every second, on the
-- database's clock (so the appliances' clocks need not agree); the standby answers while the
-- primary's last beat is older than its takeover time.
CREATE TABLE dhcp_pairs (
    pair text COLLATE "C",
    role text COLLATE "C" CHECK (role IN ('primary', 'standby')),
    appliance text NOT NULL,
    active boolean NOT NULL,
    beat_at timestamptz NOT NULL,
    PRIMARY KEY (pair, role)
);
