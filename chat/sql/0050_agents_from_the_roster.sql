-- Which agents exist is the roster's to say (docs/adding-an-agent.md), not the schema's:
-- a new specialist needs no migration of the thread. The columns still hold only what a
-- handle can be (lower-case letters, digits and _), and the application writes only the
-- handles of the room's members.
ALTER TABLE runs DROP CONSTRAINT runs_agent_check;
ALTER TABLE runs ADD CONSTRAINT runs_agent_handle CHECK (agent ~ '^[a-z][a-z0-9_]{1,30}$');
ALTER TABLE messages DROP CONSTRAINT messages_author_check;
ALTER TABLE messages ADD CONSTRAINT messages_author_handle CHECK (author ~ '^[a-z][a-z0-9_]{1,30}$');
