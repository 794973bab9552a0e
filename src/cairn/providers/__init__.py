"""cairn.providers."""
