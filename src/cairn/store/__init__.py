"""SQLite storage through apsw. Synchronous code only: callers run it in worker threads."""
