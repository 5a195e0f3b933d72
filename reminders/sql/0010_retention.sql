-- Past wake notes (delivered, cancelled, failed) are pruned once their due time is older
-- than WAKE_NOTES_KEEP_S (reminders.store.Notes.prune_past); this finds them directly.
CREATE INDEX wake_notes_past ON wake_notes (due_at) WHERE status IN ('delivered', 'cancelled', 'failed');
