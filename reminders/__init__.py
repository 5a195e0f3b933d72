"""Prospective memory: Ava's wake notes, the queue that fires them, and delivery."""
