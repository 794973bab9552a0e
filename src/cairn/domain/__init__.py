"""Domain value types: attrs only, no I/O, no imports from the rest of cairn."""
