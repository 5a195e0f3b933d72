-- Which integrations exist is for the specialists' packages to declare
-- (docs/adding-an-agent.md), not the schema: a new vendor needs no migration of the links.
ALTER TABLE integration_links DROP CONSTRAINT integration_links_integration_check;
ALTER TABLE integration_links ADD CONSTRAINT integration_links_integration_name
    CHECK (integration ~ '^[a-z][a-z0-9_]{1,30}$');
