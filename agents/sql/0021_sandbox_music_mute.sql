-- The volume a sandbox device had before it was muted, so "unmute" brings that back
-- (docs/specialists.md, Yori); NULL while the device is not muted.
ALTER TABLE sandbox_music_devices
    ADD COLUMN muted_from INTEGER CHECK (muted_from BETWEEN 1 AND 100);
