-- rackboot CMDB on PostgreSQL, schema 8: Tang key pairs (private halves sealed with the data key
-- of the appliance that made them) and which machines' encrypted volumes are bound to which.
CREATE TABLE tang_keys (k bigint PRIMARY KEY, v json NOT NULL);
CREATE TABLE tang_bindings (k bigint PRIMARY KEY, v json NOT NULL);
