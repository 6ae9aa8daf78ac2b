"""py4j's callback server, taking calls only from the JVM that holds the application's secret.

zskip's rule calls its Python planner (and zskip's procedures) back through py4j's callback server,
the one PySpark starts for ``foreachBatch``.  PySpark starts that server without an auth token, and
points the JVM's client at it with a copy that carries none, so any local process that connects to
its loopback port could call the functions registered there as the JVM does.  Here the server is
armed with the gateway's own secret (the one this process already authenticates to the JVM with)
before it takes a connection, and the JVM's client is swapped for one that sends that secret on every
connection it opens (``io.zskip.hosted.Callbacks``).  A server PySpark started earlier is armed in place:
the connections it already took stay, every new one must authenticate.
"""

from __future__ import annotations

import logging
from typing import Any

__all__ = ["ensure_authenticated"]

log = logging.getLogger(__name__)


def ensure_authenticated(gateway: Any) -> None:
    """Start ``gateway``'s callback server if it is not started, so that it refuses any connection
    that does not authenticate with the gateway's secret, and have the JVM's client authenticate."""
    from py4j.java_gateway import JavaObject
    from pyspark.java_gateway import ensure_callback_server_started

    token = getattr(gateway.gateway_parameters, "auth_token", None)
    parameters = gateway.callback_server_parameters
    if not token:
        # a gateway without a secret (py4j started by hand): there is nothing to authenticate with
        log.warning("py4j's gateway has no secret: zskip's callbacks are not authenticated")
        ensure_callback_server_started(gateway)
        return
    if getattr(parameters, "auth_token", None) == token and gateway.__dict__.get("_zskip_authenticated"):
        return
    parameters.auth_token = token  # read by every connection the server takes from now on
    ensure_callback_server_started(gateway)
    server = JavaObject("GATEWAY_SERVER", gateway._gateway_client)
    gateway.jvm.io.zskip.hosted.Callbacks.authenticate(server, token)
    gateway.__dict__["_zskip_authenticated"] = True
