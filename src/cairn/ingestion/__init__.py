"""cairn.ingestion."""
