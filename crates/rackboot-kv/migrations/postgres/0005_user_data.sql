-- rackboot CMDB on PostgreSQL, schema 5: cloud-init user-data, kept apart from the machines,
-- racks and tasks it belongs to (key `machine:<id>`, `rack:<name>` or `task:<id>`).
CREATE TABLE user_data (k text COLLATE "C" PRIMARY KEY, v json NOT NULL);
