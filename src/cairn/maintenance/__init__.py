"""cairn.maintenance."""
