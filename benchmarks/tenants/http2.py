"""Rows 1 and 2 of issue 37: control-frame and CONTINUATION floods over HTTP/2, whichever way the server lets one
open it."""

from __future__ import annotations

import contextlib
import ssl
import threading
import time
from collections import Counter
from typing import Any

from benchmarks.tenants.wire import (
    CONTINUATION,
    END_HEADERS,
    END_STREAM,
    HEADERS,
    PING,
    Control,
    Target,
    frame,
    header_block,
    open_h2,
    run_threads,
    settings,
)


def h2_control_flood(target: Target, control: Control, connections: int = 8) -> dict[str, Any]:
    """Row 1: PING and SETTINGS frames as fast as they go, a request stream held open, GET /healthz every 100 ms."""
    counts: Counter[str] = Counter()
    lock = threading.Lock()
    first_round = threading.Barrier(connections, action=control.armed)
    pings = frame(PING, 0, 0, b"\0" * 8) * 40 + settings(enable_push=0) * 10
    healthz = header_block("GET", "/healthz")

    def reader(sock: ssl.SSLSocket) -> None:
        """Reads what the server sends, counting frames by type; a HEADERS frame past stream 1 answers a /healthz."""
        buffer = b""
        while True:
            try:
                sock.settimeout(1.0)
                chunk = sock.recv(65536)
            except TimeoutError:
                if control.stopping():
                    return
                continue
            except (OSError, ValueError):
                return
            if not chunk:
                return
            buffer += chunk
            while len(buffer) >= 9 and len(buffer) >= 9 + int.from_bytes(buffer[:3], "big"):
                length, kind, stream = int.from_bytes(buffer[:3], "big"), buffer[3], buffer[5:9]
                buffer = buffer[9 + length :]
                with lock:
                    counts[f"frames_received_type_{kind}"] += 1
                    if kind == HEADERS and int.from_bytes(stream, "big") > 1:
                        counts["healthz_answered"] += 1

    def one(i: int) -> None:
        source = target.sources[i % len(target.sources)]
        waited = False
        while not control.stopping():
            with lock:
                counts["attempts"] += 1
            sock = open_h2(target, source, settings(enable_push=0), counts)
            if not waited:
                waited = True
                with contextlib.suppress(threading.BrokenBarrierError):
                    first_round.wait(timeout=30)
            if sock is None:
                control.wait(0.2)
                continue
            threading.Thread(target=reader, args=(sock,), daemon=True).start()
            stream, next_healthz = 3, time.monotonic()
            try:
                sock.settimeout(2.0)
                sock.sendall(frame(HEADERS, END_HEADERS, 1, header_block("POST", "/mutate")))  # held: no END_STREAM
                while not control.stopping():
                    batch = pings
                    if time.monotonic() >= next_healthz:
                        batch += frame(HEADERS, END_HEADERS | END_STREAM, stream, healthz)
                        stream, next_healthz = stream + 2, next_healthz + 0.1
                        with lock:
                            counts["healthz_sent"] += 1
                    sock.sendall(batch)
                    with lock:
                        counts["control_frames_sent"] += 50
                        counts["bytes_sent"] += len(batch)
            except (OSError, ssl.SSLError) as e:
                with lock:
                    counts[f"closed_by_server: {type(e).__name__}"] += 1
            finally:
                sock.close()

    run_threads(connections, one)
    return {"connections": connections, **counts}


def continuation_flood(target: Target, control: Control, connections: int = 8) -> dict[str, Any]:
    """Row 2: a stream held by a zero receive window (GET /metrics), then CONTINUATION frames of one header block
    that never ends, on `connections` connections."""
    counts: Counter[str] = Counter()
    lock = threading.Lock()
    first_round = threading.Barrier(connections, action=control.armed)
    junk = frame(CONTINUATION, 0, 3, b"\x40\x0ax-junk-hdr\x7f" + b"a" * 16_000) * 8

    def one(i: int) -> None:
        source = target.sources[i % len(target.sources)]
        waited = False
        while not control.stopping():
            with lock:
                counts["attempts"] += 1
            sock = open_h2(target, source, settings(initial_window_size=0, enable_push=0), counts)
            if not waited:
                waited = True
                with contextlib.suppress(threading.BrokenBarrierError):
                    first_round.wait(timeout=30)
            if sock is None:
                control.wait(0.2)
                continue
            try:
                sock.settimeout(2.0)
                sock.sendall(frame(HEADERS, END_HEADERS | END_STREAM, 1, header_block("GET", "/metrics")))
                sock.sendall(frame(HEADERS, 0, 3, header_block("POST", "/mutate")))  # no END_HEADERS
                while not control.stopping():
                    try:
                        sock.sendall(junk)
                    except TimeoutError:  # the server stopped reading but holds the connection (and what it read)
                        with lock:
                            counts["send_stalled_2s"] += 1
                        continue
                    with lock:
                        counts["continuation_bytes_sent"] += len(junk)
            except (OSError, ssl.SSLError) as e:
                with lock:
                    counts[f"closed_by_server: {type(e).__name__}"] += 1
            finally:
                sock.close()

    run_threads(connections, one)
    return {"connections": connections, **counts}
