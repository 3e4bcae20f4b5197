-- rackboot CMDB on PostgreSQL, schema 7: webhook subscriptions, each with its delivery status
-- (its secret sealed with the data key of the appliance that made it).
CREATE TABLE webhooks (k bigint PRIMARY KEY, v json NOT NULL);
