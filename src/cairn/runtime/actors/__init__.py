"""The actors of one agent's supervisor. Each has one public async method, ``run``."""
