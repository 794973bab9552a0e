"""Provider gateway overhead on loopback: a bare httpx POST against the same request made
through the OpenAI-compatible embedder and through the query-embedding gateway (deadline
and breaker). A minimal HTTP server in this process answers every request with the same
embedding, so the difference is our code. Then a deadline trace: the adaptive query deadline
of a fresh gateway before any call, after warm calls, after one call the server holds past
the deadline, and after the next success. Prints one JSON object.

    python bench/gateway_overhead.py [--calls 500]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from functools import partial

import trio

from cairn.providers.gateway import QueryEmbeddingGateway
from cairn.providers.http import (
    HttpEmbedderConfig,
    OpenAICompatibleEmbedder,
    open_http_client,
)

DIMENSION = 384
BODY = json.dumps(
    {
        "data": [
            {"index": 0, "embedding": [0.01 * (i % 7 + 1) for i in range(DIMENSION)]}
        ]
    }
).encode()
RESPONSE = (
    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
    + str(len(BODY)).encode()
    + b"\r\n\r\n"
    + BODY
)


# Seconds the server holds the next answer (the deadline trace makes one call miss).
HOLD_NEXT_S = [0.0]


async def serve(stream: trio.SocketStream) -> None:
    buffer = b""
    async with stream:
        while True:
            while b"\r\n\r\n" not in buffer:
                chunk = await stream.receive_some(65536)
                if not chunk:
                    return
                buffer += chunk
            head, _, rest = buffer.partition(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            while len(rest) < length:
                rest += await stream.receive_some(65536)
            buffer = rest[length:]
            if HOLD_NEXT_S[0]:
                hold, HOLD_NEXT_S[0] = HOLD_NEXT_S[0], 0.0
                await trio.sleep(hold)
            await stream.send_all(RESPONSE)


def p50_us(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1e6, 1)


async def main(calls: int) -> dict[str, object]:
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(
            partial(trio.serve_tcp, serve, 0, host="127.0.0.1")
        )
        port = listeners[0].socket.getsockname()[1]
        url = f"http://127.0.0.1:{port}"
        config = HttpEmbedderConfig(base_url=url, model="m", dimension=DIMENSION)
        results: dict[str, list[float]] = {
            "bare_httpx": [],
            "embedder": [],
            "gateway": [],
        }
        async with open_http_client() as client:
            embedder = OpenAICompatibleEmbedder(client, config)
            gateway = QueryEmbeddingGateway(embedder)
            payload = {"model": "m", "input": ["what does the user like?"]}

            async def bare() -> None:
                response = await client.post(f"{url}/v1/embeddings", json=payload)
                response.json()

            async def through_embedder() -> None:
                await embedder.embed_query("what does the user like?")

            async def through_gateway() -> None:
                await gateway.embed_query("agent", "what does the user like?")

            runners = {
                "bare_httpx": bare,
                "embedder": through_embedder,
                "gateway": through_gateway,
            }
            for _ in range(20):  # warm the connection pool and code paths
                for run in runners.values():
                    await run()
            for _ in range(calls):
                for name, run in runners.items():
                    started = time.perf_counter()
                    await run()
                    results[name].append(time.perf_counter() - started)
            trace = await deadline_trace(embedder)
        nursery.cancel_scope.cancel()
    bare_p50 = statistics.median(results["bare_httpx"])
    return {
        "calls": calls,
        "p50_us": {name: p50_us(samples) for name, samples in results.items()},
        "ratio_to_bare": {
            name: round(statistics.median(samples) / bare_p50, 3)
            for name, samples in results.items()
        },
        "deadline_s": trace,
    }


async def deadline_trace(embedder: OpenAICompatibleEmbedder) -> dict[str, object]:
    gateway = QueryEmbeddingGateway(embedder)
    deadline = gateway.deadline()
    trace: dict[str, object] = {"before_any_call": deadline.timeout_s()}
    await gateway.embed_query("agent", "q")
    trace["after_1_success"] = deadline.timeout_s()
    for _ in range(19):
        await gateway.embed_query("agent", "q")
    trace["after_20_successes"] = deadline.timeout_s()
    HOLD_NEXT_S[0] = 3.0  # past the ceiling
    missed = await gateway.embed_query("agent", "q")
    trace["held_call_outcome"] = str(missed.degradation or "ok")
    trace["after_miss"] = deadline.timeout_s()
    await gateway.embed_query("agent", "q")
    trace["after_next_success"] = deadline.timeout_s()
    return trace


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500)
    arguments = parser.parse_args()
    json.dump(trio.run(main, arguments.calls), sys.stdout)
    print()
