"""The stress and fault harness behind ``cairn stress``.

It drives a real runtime (in process, and real servers over their socket with several
clients) with a seeded workload over many agents, records every call as an
invoke/ok/fail/unknown history, and checks the engine's promises (I1–I8,
``design/invariants.md``) against that history and against the data directory itself.
Modes: the workload, SIGKILL trials at random moments and at named crash points
(:mod:`cairn.crashpoints`), I/O faults through an apsw VFS shim, and a socket load test.
A failure names the seed and the shortest history that shows it; the same seed replays it.
"""
