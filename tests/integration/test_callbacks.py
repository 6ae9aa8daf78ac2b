"""py4j's callback server, through which zskip's rule calls its Python planner, takes a call only on a
connection that authenticated with the application's secret; the JVM's own calls still arrive."""

from __future__ import annotations

import socket
from typing import Any, ClassVar

import pytest

import zskip
from zskip.iceberg.hook import _proxies

pytestmark = pytest.mark.integration


class _Supplier:
    """A JVM ``Supplier`` calling ``function`` (run by the JVM on a thread of its own)."""

    def __init__(self, function: Any) -> None:
        self._function = function

    def get(self) -> str:
        return self._function()

    class Java:
        implements: ClassVar[list[str]] = ["java.util.function.Supplier"]


def _exchange(port: int, lines: list[str]) -> bytes:
    """Send ``lines`` on a fresh connection to ``port``; what came back before it closed or went quiet."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as connection:
        connection.sendall("".join(line + "\n" for line in lines).encode())
        received = b""
        try:
            while chunk := connection.recv(4096):
                received += chunk
                if received.endswith(b"\n"):
                    break
        except (TimeoutError, ConnectionResetError):
            pass
        return received


def test_the_callback_server_takes_no_call_without_the_secret(spark: Any) -> None:
    zskip.enable(spark)
    gateway = spark.sparkContext._gateway
    calls: list[str] = []

    def planner(argument: str) -> str:
        calls.append(str(argument))
        return "planned"

    (proxy,) = _proxies(gateway, planner)
    pool = gateway._callback_server.pool
    (object_id,) = [key for key, value in pool.dict.items() if getattr(value, "_plan", None) is planner]
    port = gateway._callback_server.server_socket.getsockname()[1]
    call = ["c", object_id, "apply", "sintruder", "e"]

    assert _exchange(port, call) == b""  # refused: closed without an answer
    assert _exchange(port, ["A", "not-the-secret", "e", *call]).startswith(b"!x")  # an error, then closed
    assert calls == []

    # with the secret the same call is served (so the refusal above is the token's doing)
    token = gateway.gateway_parameters.auth_token
    answer = _exchange(port, ["A", token, "e"])
    assert answer == b"!yv\n", answer
    assert calls == []

    # the JVM's own client authenticates: a call it makes on a thread of its own (a new connection)
    # reaches the planner
    supplier = gateway.jvm.java.util.ArrayList()
    supplier.add(_Supplier(lambda: proxy.apply("from the jvm")))
    future = gateway.jvm.java.util.concurrent.CompletableFuture.supplyAsync(supplier.get(0))
    assert future.get() == "planned"
    assert calls == ["from the jvm"]
