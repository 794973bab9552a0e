"""cairn.cli."""
