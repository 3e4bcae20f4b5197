-- rackboot CMDB on PostgreSQL, schema 2: the change log's trim watermark.
--
-- The change log keeps an hour. `through` is the newest sequence a trim has removed: an
-- appliance whose follower is behind it (cut off from the store for longer than the log keeps)
-- has missed changes it can no longer read one by one, and reloads its memory from the tables.
CREATE TABLE changes_trimmed (
    one boolean PRIMARY KEY DEFAULT true CHECK (one),
    through bigint NOT NULL
);
INSERT INTO changes_trimmed (one, through) VALUES (true, 0);
