"""A real Apache Kafka for the tests: the pinned release copied by Maven into a cache folder, KRaft
nodes (broker and controller in one process) on 127.0.0.1 on free ports in a temporary folder, and
Kafka's own tool classes run with ``java -cp``.

Every process started here is recorded by its PID and stopped by it: SIGTERM for a clean stop (the
broker flushes and writes its clean-shutdown marker), SIGKILL for a crash.
"""

from __future__ import annotations

import base64
import fcntl
import logging
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
POM = HERE / "pom.xml"
KAFKA_VERSION = "4.1.1"  # the release pinned in pom.xml (kafka.version)
CACHE_ROOT = Path(os.environ.get("KAFKADUMP_BROKER_CACHE", Path.home() / ".cache" / "kafkadump-broker"))
JVM_OPTIONS = ["-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true"]
TOOL_JVM_OPTIONS = ["-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto"]

DUMP_LOG_SEGMENTS = "kafka.tools.DumpLogSegments"
TRANSACTIONS = "org.apache.kafka.tools.TransactionsCommand"
GET_OFFSETS = "org.apache.kafka.tools.GetOffsetShell"
CONSUMER_GROUPS = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
METADATA_SHELL = "org.apache.kafka.shell.MetadataShell"
LEADER_ELECTION = "org.apache.kafka.tools.LeaderElectionCommand"
STORAGE_TOOL = "kafka.tools.StorageTool"
TOPICS = "org.apache.kafka.tools.TopicCommand"

LOG4J2 = """\
status = error
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
logger.request.name = kafka.request.logger
logger.request.level = WARN
"""

TOOL_LOG4J2 = """\
status = error
appender.err.type = Console
appender.err.name = err
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = %p %m%n
rootLogger.level = WARN
rootLogger.appenderRef.err.ref = err
"""


def missing_tools() -> str | None:
    """Why a real broker cannot run here (Java or Maven missing), or None."""
    for tool in ("java", "mvn"):
        if shutil.which(tool) is None:
            return f"{tool} is not on PATH: the broker tests need Java 17+ and Maven (tests/broker/README.md)"
    return None


def kafka_lib() -> Path:
    """The folder of the pinned Kafka's jars, copied there by Maven on first use (one copy at a time;
    ~/.m2 is reused, so a second run downloads nothing)."""
    lib = CACHE_ROOT / KAFKA_VERSION / "lib"
    if (lib / f"kafka_2.13-{KAFKA_VERSION}.jar").exists():
        return lib
    lib.parent.mkdir(parents=True, exist_ok=True)
    with open(lib.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (lib / f"kafka_2.13-{KAFKA_VERSION}.jar").exists():
            staging = Path(tempfile.mkdtemp(prefix="lib.", dir=lib.parent))
            subprocess.run(
                ["mvn", "-q", "-B", "-f", str(POM), "dependency:copy-dependencies",
                 f"-DoutputDirectory={staging}", f"-Dkafka.version={KAFKA_VERSION}"],
                check=True, stdout=subprocess.DEVNULL, timeout=900,
            )
            if lib.exists():
                shutil.rmtree(lib)
            staging.rename(lib)
    return lib


def classpath() -> str:
    return str(kafka_lib() / "*")


def free_ports(count: int) -> list[int]:
    """``count`` distinct free TCP ports on 127.0.0.1 (held open together so they differ)."""
    socks = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def quiet(config: dict) -> dict:
    """A librdkafka client's configuration that keeps its connection chatter off stderr."""
    return {"log_level": 0, "logger": _SILENT, **config}


_SILENT = logging.getLogger("kafkadump.tests.librdkafka")
_SILENT.addHandler(logging.NullHandler())
_SILENT.propagate = False


def new_cluster_id() -> str:
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def tool_argv(main_class: str, *args: str) -> list[str]:
    """The command line of one of Kafka's own tool classes: ``java -cp LIB/* CLASS ARGS``, its log to stderr."""
    log_config = CACHE_ROOT / "tool-log4j2.properties"
    if not log_config.exists():
        log_config.parent.mkdir(parents=True, exist_ok=True)
        log_config.write_text(TOOL_LOG4J2)
    return ["java", *TOOL_JVM_OPTIONS, f"-Dlog4j2.configurationFile={log_config}", "-cp", classpath(),
            main_class, *args]


def run_tool(main_class: str, *args: str, timeout: float = 120, check: bool = True,
             stdin: str | None = None, text: bool = True) -> subprocess.CompletedProcess:
    """One of Kafka's own tool classes, run to its end; ``text=False`` keeps its output as bytes (a
    payload's ``\r`` stays a ``\r``)."""
    done = subprocess.run(tool_argv(main_class, *args), capture_output=True, text=text, timeout=timeout, input=stdin)
    if check and done.returncode != 0:
        err = done.stderr if text else done.stderr.decode(errors="replace")
        raise RuntimeError(f"{main_class} {' '.join(args)} exited {done.returncode}:\n{err[-4000:]}")
    return done


@dataclass
class Node:
    """One KRaft node: broker and controller in one JVM."""

    node_id: int
    port: int
    controller_port: int
    home: Path
    properties: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen | None = None

    @property
    def log_dir(self) -> Path:
        return self.home / "data"

    @property
    def server_log(self) -> Path:
        return self.home / "server.log"

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None


class Cluster:
    """``size`` KRaft nodes on 127.0.0.1, each broker and controller, all voters of the quorum.

    ``settings`` are broker properties for every node (small partition counts for the internal
    topics by default, so a node starts fast)."""

    def __init__(self, root: Path, size: int = 1, settings: dict[str, str] | None = None,
                 features: dict[str, int] | None = None):
        self.root = Path(root)
        self.features = dict(features or {})  # storage format --feature NAME=LEVEL (e.g. KIP-966's ELR off)
        self.cluster_id = new_cluster_id()
        ports = free_ports(2 * size)
        self.nodes = [
            Node(i + 1, ports[2 * i], ports[2 * i + 1], self.root / f"node{i + 1}") for i in range(size)
        ]
        replication = str(min(size, 3))
        base = {
            "offsets.topic.replication.factor": replication,
            "offsets.topic.num.partitions": "4",
            "transaction.state.log.replication.factor": replication,
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "4",
            "share.coordinator.state.topic.replication.factor": replication,
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            "num.partitions": "1",
            "default.replication.factor": replication,
            "auto.create.topics.enable": "false",
            "log.cleaner.backoff.ms": "200",
            "log.retention.check.interval.ms": "500",
            "log.initial.task.delay.ms": "200",
            "file.delete.delay.ms": "200",
            "log.segment.delete.delay.ms": "200",
            "controller.quorum.election.timeout.ms": "1000",
            "controller.quorum.fetch.timeout.ms": "2000",
            "broker.heartbeat.interval.ms": "500",
            "broker.session.timeout.ms": "6000",
            "transaction.abort.timed.out.transaction.cleanup.interval.ms": "3600000",
        }
        self.settings = {**base, **(settings or {})}

    # ---- configuration -------------------------------------------------------------------------

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{n.port}" for n in self.nodes if n.running())

    def voters(self) -> str:
        return ",".join(f"{n.node_id}@127.0.0.1:{n.controller_port}" for n in self.nodes)

    def _write_config(self, node: Node) -> Path:
        node.home.mkdir(parents=True, exist_ok=True)
        props = {
            "process.roles": "broker,controller",
            "node.id": str(node.node_id),
            "controller.quorum.voters": self.voters(),
            "listeners": f"PLAINTEXT://127.0.0.1:{node.port},CONTROLLER://127.0.0.1:{node.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{node.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(node.log_dir),
            **self.settings,
            **node.properties,
        }
        path = node.home / "server.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        (node.home / "log4j2.properties").write_text(LOG4J2.format(log=node.server_log))
        return path

    def format(self) -> None:
        features = [arg for name, level in self.features.items() for arg in ("--feature", f"{name}={level}")]
        for node in self.nodes:
            config = self._write_config(node)
            run_tool(STORAGE_TOOL, "format", f"--cluster-id={self.cluster_id}", "-c", str(config), "--ignore-formatted",
                     *features)

    # ---- processes -----------------------------------------------------------------------------

    def start_node(self, node: Node) -> None:
        config = self._write_config(node)
        cmd = ["java", *JVM_OPTIONS, f"-Dlog4j2.configurationFile={node.home / 'log4j2.properties'}",
               "-cp", classpath(), "kafka.Kafka", str(config)]
        out = open(node.home / "stdout.log", "ab")
        node.process = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                        start_new_session=True)
        out.close()
        (node.home / "pid").write_text(str(node.process.pid))

    def start(self, timeout: float = 90) -> Cluster:
        self.format()
        for node in self.nodes:
            self.start_node(node)
        self.wait_ready(timeout=timeout)
        return self

    def wait_ready(self, timeout: float = 90, brokers: int | None = None) -> None:
        """Until every running node serves (it answers a metadata request listing ``brokers``)."""
        from confluent_kafka.admin import AdminClient

        want = brokers if brokers is not None else sum(1 for n in self.nodes if n.running())
        deadline = time.monotonic() + timeout
        last_error: object = None
        while time.monotonic() < deadline:
            dead = [n for n in self.nodes if n.process is not None and n.process.poll() is not None
                    and n.process.returncode not in (None, -signal.SIGKILL, -signal.SIGTERM, 143, 137)]
            if dead:
                raise RuntimeError(f"node {dead[0].node_id} exited {dead[0].process.returncode}: "
                                   f"{self.tail(dead[0])}")
            try:
                admin = AdminClient(quiet({"bootstrap.servers": self.bootstrap, "socket.timeout.ms": 2000}))
                meta = admin.list_topics(timeout=3)
                if len(meta.brokers) >= want:
                    return
                last_error = f"{len(meta.brokers)} of {want} brokers"
            except Exception as exc:  # noqa: BLE001 - not up yet
                last_error = exc
            time.sleep(0.5)
        raise RuntimeError(f"cluster not ready in {timeout} s ({last_error}); {self.tail(self.nodes[0])}")

    def tail(self, node: Node, lines: int = 30) -> str:
        try:
            return "\n".join(node.server_log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no server log)"

    def stop_node(self, node: Node, kill: bool = False, timeout: float = 60) -> None:
        """Stop a node by its PID: SIGTERM (a clean shutdown) or SIGKILL (a crash)."""
        if node.process is None or node.process.poll() is not None:
            return
        node.process.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        try:
            node.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            node.process.kill()
            node.process.wait()

    def stop(self, kill: bool = False) -> None:
        for node in self.nodes:
            self.stop_node(node, kill=kill)

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop(kill=True)
