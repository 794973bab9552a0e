"""cattrs converters, one per boundary."""
