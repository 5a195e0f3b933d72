-- Risky actions are pruned once they expired long ago (settled or never confirmed):
-- agents.integrations.confirmations.prune_actions finds them by this index.
CREATE INDEX pending_actions_expires ON pending_actions (expires_at);
