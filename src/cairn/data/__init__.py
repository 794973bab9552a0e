"""Data files shipped with cairn (the demo conversation)."""
