-- Runs once, when the PostgreSQL volume is created: the order store gets a
-- database and a role of its own, apart from Temporal's databases.
CREATE ROLE ordersync LOGIN PASSWORD 'ordersync';
CREATE DATABASE ordersync OWNER ordersync;
