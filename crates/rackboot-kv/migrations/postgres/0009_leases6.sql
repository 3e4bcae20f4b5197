-- rackboot CMDB on PostgreSQL, schema 9: DHCPv6 leases. The key is the IPv6 address's 16 bytes
-- (bytea sorts them in address order): one lease per address, whichever appliance writes it.
CREATE TABLE leases6 (k bytea PRIMARY KEY CHECK (length(k) = 16), v json NOT NULL);
-- ...and an active, unexpired lease is never handed to another client (DUID and IAID), whichever
-- appliance asks: the batch fails (check_violation) and no REPLY of it goes out.
CREATE FUNCTION leases6_one_client() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.v->>'state' = 'active'
       AND (OLD.v->>'expires_at')::bigint > extract(epoch FROM now())
       AND (OLD.v->>'duid' IS DISTINCT FROM NEW.v->>'duid' OR OLD.v->>'iaid' IS DISTINCT FROM NEW.v->>'iaid') THEN
        RAISE EXCEPTION 'address % is leased to DUID % until %, not to %',
            OLD.v->>'ip', OLD.v->>'duid', to_timestamp((OLD.v->>'expires_at')::bigint), NEW.v->>'duid'
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER leases6_one_client BEFORE UPDATE ON leases6 FOR EACH ROW EXECUTE FUNCTION leases6_one_client();
