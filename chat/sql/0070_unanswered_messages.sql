-- The server's sweep (chat/recovery.py) looks, every few seconds, for the person's
-- messages of the last day that no run answers (a turn cut off by a database outage
-- between writing the message and starting its run), so it reads only recent human
-- messages, newest last, never the whole thread table.
CREATE INDEX messages_human_recent ON messages (created_at) WHERE author = 'human';
