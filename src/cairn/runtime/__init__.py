"""cairn.runtime."""
