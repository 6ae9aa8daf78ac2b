"""Real servers on loopback for the object-storage tests: an S3-compatible store and Iceberg's REST
catalog server (a JDBC catalog in SQLite, its warehouse on that store through S3FileIO).

The store is S3Proxy (its buckets in a local folder), or, with ``ZSKIP_TEST_S3_SERVER=moto``, moto's S3
server (another implementation of the S3 API, its buckets in memory), to check zskip against a second
store.  S3Proxy and the REST server are Java programs resolved by Maven coordinates
(``zskip.iceberg.jvm_dependencies.TEST_SERVERS``), moto a Python package of the dev extra; all are
started as child processes.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from zskip.iceberg.jvm_dependencies import TEST_SERVERS, server_classpath

ACCESS_KEY = "zskip-test-access"
SECRET_KEY = "zskip-test-secret-key"


SERVERS = ("s3proxy", "moto")


def chosen_server() -> str:
    """The S3 server the tests start: ``ZSKIP_TEST_S3_SERVER`` (``s3proxy``, the default, or ``moto``)."""
    name = os.environ.get("ZSKIP_TEST_S3_SERVER", "s3proxy").strip().lower()
    if name not in SERVERS:
        raise ValueError(f"ZSKIP_TEST_S3_SERVER={name!r}: not one of {', '.join(SERVERS)}")
    return name


@dataclass(frozen=True)
class S3Server:
    endpoint: str  # http://127.0.0.1:<port>
    folder: Path | None  # where its buckets live (None: in the server's memory)
    kind: str = "s3proxy"
    # whether a request signed with another secret is refused (moto, by default, takes any credentials)
    checks_credentials: bool = True

    def hadoop_conf(self) -> dict[str, str]:
        """Spark settings through which Hadoop's S3A reaches this store (``s3a://``)."""
        return {
            "spark.hadoop.fs.s3a.endpoint": self.endpoint,
            "spark.hadoop.fs.s3a.access.key": ACCESS_KEY,
            "spark.hadoop.fs.s3a.secret.key": SECRET_KEY,
            "spark.hadoop.fs.s3a.path.style.access": "true",
            "spark.hadoop.fs.s3a.endpoint.region": "us-east-1",
        }

    def catalog_conf(self, catalog: str) -> dict[str, str]:
        """Settings of catalog ``catalog``'s S3FileIO reaching this store (``s3://``)."""
        return {
            f"spark.sql.catalog.{catalog}.io-impl": "org.apache.iceberg.aws.s3.S3FileIO",
            f"spark.sql.catalog.{catalog}.s3.endpoint": self.endpoint,
            f"spark.sql.catalog.{catalog}.s3.access-key-id": ACCESS_KEY,
            f"spark.sql.catalog.{catalog}.s3.secret-access-key": SECRET_KEY,
            f"spark.sql.catalog.{catalog}.s3.path-style-access": "true",
            f"spark.sql.catalog.{catalog}.client.region": "us-east-1",
        }

    def create_bucket(self, name: str) -> None:
        if self.folder is not None:  # S3Proxy's file system backend: a bucket is a folder
            (self.folder / name).mkdir(parents=True, exist_ok=True)
        else:
            self._client().create_bucket(Bucket=name)

    def objects(self, bucket: str, prefix: str = "") -> list[str]:
        """Keys of the objects under ``prefix`` in ``bucket`` (from the store's own folder, where it has one)."""
        if self.folder is not None:
            root = self.folder / bucket
            return sorted(str(p.relative_to(root)) for p in (root / prefix).rglob("*") if p.is_file())
        pages = self._client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        return sorted(item["Key"] for page in pages for item in page.get("Contents", ()))

    def delete_bucket(self, name: str) -> None:
        """Delete bucket ``name`` with everything in it, under the tables that live there."""
        if self.folder is not None:
            shutil.rmtree(self.folder / name)
            return
        client = self._client()
        for key in self.objects(name):
            client.delete_object(Bucket=name, Key=key)
        client.delete_bucket(Bucket=name)

    def _client(self):  # type: ignore[no-untyped-def]
        import boto3  # moto's dependency: only a store without a folder of its own needs it

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
            region_name="us-east-1",
        )

    def to_json(self) -> dict[str, object]:
        return {"endpoint": self.endpoint, "folder": None if self.folder is None else str(self.folder),
                "kind": self.kind, "checks_credentials": self.checks_credentials}  # fmt: skip

    @classmethod
    def from_json(cls, given: dict[str, object]) -> S3Server:
        folder = given["folder"]
        return cls(str(given["endpoint"]), None if folder is None else Path(str(folder)), str(given["kind"]),
                   bool(given["checks_credentials"]))  # fmt: skip


def missing() -> str | None:
    """Why the servers cannot start here (None: they can)."""
    if chosen_server() == "moto":
        try:
            import moto.server  # noqa: F401
        except ImportError:
            return "ZSKIP_TEST_S3_SERVER=moto, and moto's server is not installed (pip install 'moto[server]')"
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "no Java runtime to start the S3 and REST catalog servers"
    if shutil.which("mvn") is None:
        return "no mvn to resolve the S3 and REST catalog servers (.ci/run installs Maven)"
    return None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    return str(Path(home) / "bin" / "java") if home else "java"


@contextmanager
def _server(
    name: str, port: int, log: Path, *, env: dict[str, str], args: list[str], jvm: tuple[str, ...] = ()
) -> Iterator[None]:
    classpath = os.pathsep.join(str(p) for p in server_classpath(name))
    with open(log, "w") as out:
        process = subprocess.Popen(
            [_java(), "-Xmx512m", *jvm, "-cp", classpath, TEST_SERVERS[name].main, *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=dict(os.environ, **env),
        )
    try:
        _wait_listening(name, process, port, log)
        yield
    finally:
        _stop(process)


def _wait_listening(name: str, process: subprocess.Popen[bytes], port: int, log: Path) -> None:
    deadline = time.monotonic() + 120
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"the {name} server stopped at start: {log.read_text()[-2000:]}")
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        if time.monotonic() > deadline:
            raise RuntimeError(f"the {name} server did not listen on port {port} within 120 s")
        time.sleep(0.2)


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()


@contextmanager
def s3_server(home: Path | None = None) -> Iterator[S3Server]:
    """An S3Proxy on a free loopback port, with path-style access and one access key.  Its buckets live
    in ``home`` (kept afterwards, so a later server serves them again) or in a folder deleted afterwards."""
    keep = home is not None
    home = Path(tempfile.mkdtemp(prefix="zskip-s3-")) if home is None else home
    home.mkdir(parents=True, exist_ok=True)
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    properties = home / "s3proxy.properties"
    properties.write_text(
        "\n".join(
            [
                f"s3proxy.endpoint={endpoint}",
                "s3proxy.authorization=aws-v2-or-v4",
                f"s3proxy.identity={ACCESS_KEY}",
                f"s3proxy.credential={SECRET_KEY}",
                "jclouds.provider=filesystem-nio2",
                f"jclouds.filesystem.basedir={home / 'buckets'}",
            ]
        )
    )
    (home / "buckets").mkdir(exist_ok=True)
    # Logback with no configuration logs every request at DEBUG: gigabytes over a benchmark, and time
    # spent on each request that a real server does not spend
    logging_config = home / "logback.xml"
    logging_config.write_text(
        '<configuration><appender name="out" class="ch.qos.logback.core.ConsoleAppender"><encoder>'
        "<pattern>%d %level %logger - %msg%n</pattern></encoder></appender>"
        '<root level="WARN"><appender-ref ref="out"/></root></configuration>'
    )
    try:
        with _server(
            "s3proxy",
            port,
            home / "s3proxy.log",
            env={},
            args=["--properties", str(properties)],
            jvm=(f"-Dlogback.configurationFile={logging_config}",),
        ):
            yield S3Server(endpoint, home / "buckets")
    finally:
        if not keep:
            shutil.rmtree(home, ignore_errors=True)


@contextmanager
def started_s3_server() -> Iterator[S3Server]:
    """The S3 server ``ZSKIP_TEST_S3_SERVER`` names (``chosen_server``), on a free loopback port."""
    with s3_server() if chosen_server() == "s3proxy" else moto_server() as s3:
        yield s3


@contextmanager
def moto_server() -> Iterator[S3Server]:
    """moto's S3 server on a free loopback port (path-style access, buckets in memory, any credentials)."""
    port = free_port()
    home = Path(tempfile.mkdtemp(prefix="zskip-moto-"))
    try:
        with open(home / "moto.log", "w") as out:
            process = subprocess.Popen(
                [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        try:
            _wait_listening("moto", process, port, home / "moto.log")
            yield S3Server(f"http://127.0.0.1:{port}", None, kind="moto", checks_credentials=False)
        finally:
            _stop(process)
    finally:
        shutil.rmtree(home, ignore_errors=True)


@contextmanager
def rest_catalog(s3: S3Server, warehouse: str, *, retry_wait_ms: tuple[int, int] | None = None) -> Iterator[str]:
    """Iceberg's REST catalog server on a free loopback port, its tables in ``warehouse`` (``s3://...``) on
    ``s3``; yields its URI.  ``retry_wait_ms``: its S3FileIO's shortest and longest wait between retries
    (``s3.retry.min-wait-ms``, ``s3.retry.max-wait-ms``; S3FileIO's own defaults otherwise)."""
    home = Path(tempfile.mkdtemp(prefix="zskip-rest-"))
    port = free_port()
    env = {
        "CATALOG_REST_PORT": str(port),
        "CATALOG_WAREHOUSE": warehouse,
        "CATALOG_URI": f"jdbc:sqlite:file:{home / 'catalog.db'}",
        "CATALOG_IO__IMPL": "org.apache.iceberg.aws.s3.S3FileIO",
        "CATALOG_S3_ENDPOINT": s3.endpoint,
        "CATALOG_S3_ACCESS__KEY__ID": ACCESS_KEY,
        "CATALOG_S3_SECRET__ACCESS__KEY": SECRET_KEY,
        "CATALOG_S3_PATH__STYLE__ACCESS": "true",
        "CATALOG_CLIENT_REGION": "us-east-1",
    }
    if retry_wait_ms is not None:
        shortest, longest = retry_wait_ms
        env |= {"CATALOG_S3_RETRY_MIN__WAIT__MS": str(shortest), "CATALOG_S3_RETRY_MAX__WAIT__MS": str(longest)}
    try:
        with _server("rest-catalog", port, home / "rest.log", env=env, args=[]):
            yield f"http://127.0.0.1:{port}"
    finally:
        shutil.rmtree(home, ignore_errors=True)
