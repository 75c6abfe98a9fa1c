"""The three-broker replica scenario: leader changes the test causes (a clean stop of the leader, a
preferred election) and one unclean election, on a real Kafka, with what the brokers logged kept as
the oracle for ``kafkadump diff`` and ``kafkadump metadata``.

One partition, ``ledger-0``, replicas [1, 2] (node 3 is only a voter and a broker), with
``unclean.leader.election.enable=true`` and ``min.insync.replicas=1``:

1. leader 1 takes ``first`` (acks=all);
2. node 1 stopped cleanly: node 2 leads and takes ``second``; node 1 restarted and back in the ISR;
3. a preferred election: node 1 leads again and takes ``third``;
4. node 2 stopped cleanly (it leaves the ISR); node 1 alone takes ``lost`` (acks=all with ISR [1]);
5. unclean elections turned off for the topic; node 1 killed (SIGKILL); its ``ledger-0`` copied
   (the lost side);
6. node 2 restarted; once node 1 is fenced the leader is offline (leader -1); Kafka's
   leader-election tool (``--election-type unclean``) makes node 2 leader; unclean elections on again;
7. node 2 takes ``fourth`` (fewer than ``lost``); node 1 restarted truncates its log to where node 2 went on, and follows.

Eligible leader replicas (KIP-966) are on by default for a cluster formatted by Kafka 4.1 (feature
``eligible.leader.replicas.version=1``), and the scenario keeps Kafka's default: when node 1, the
last ISR member, is fenced the controller takes the leader offline and moves node 1 from the ISR to
the ELR (leader -1, ISR [], ELR and lastKnownElr [1]); node 2, in neither, is then elected unclean,
LeaderRecoveryState RECOVERING.  ``elr=False`` (``KAFKADUMP_REPLICA_ELR=0`` for the tests) formats
the nodes with ``eligible.leader.replicas.version=0`` instead: the classic path, where the ISR keeps
node 1 while the leader is offline.  With unclean elections allowed throughout, the controller
would elect node 2 itself when node 2 is back before node 1 is fenced (fencing and election in one
record), a race: step 5 takes it away.
"""

from __future__ import annotations

import re
import shutil
import struct
import time
from dataclasses import dataclass, field
from pathlib import Path

from .harness import LEADER_ELECTION, METADATA_SHELL, Cluster, Node, quiet, run_tool

TOPIC = "ledger"
PARTITION = 0
SETTINGS = {"auto.leader.rebalance.enable": "false", "replica.fetch.backoff.ms": "200",
            "broker.session.timeout.ms": "4000"}
LOST, FOURTH = 40, 25   # records node 1 alone took (then lost), and node 2 took after the unclean election
TOPIC_CONFIG = {"unclean.leader.election.enable": "true", "min.insync.replicas": "1"}


def elr_on(cluster: Cluster) -> bool:
    """Whether the cluster was formatted with eligible leader replicas on (Kafka 4.1's default)."""
    return cluster.features.get("eligible.leader.replicas.version", 1) != 0


def replica_cluster(root: Path, size: int, settings: dict[str, str], elr: bool = True) -> Cluster:
    """The harness's cluster, formatted with eligible leader replicas off (see the module), or at
    Kafka's default (on) when ``elr``."""
    return Cluster(root, size, settings, features=None if elr else {"eligible.leader.replicas.version": 0})


@dataclass
class Acked:
    phase: str
    offset: int
    key: bytes
    value: bytes


@dataclass
class Election:
    """A leader change the test caused, and the partition state Kafka's clients saw after it."""

    cause: str
    leader: int
    isr: list[int]
    unclean: bool = False


@dataclass
class Scenario:
    root: Path
    cluster: Cluster
    acked: list[Acked] = field(default_factory=list)
    elections: list[Election] = field(default_factory=list)
    truncation_lines: list[str] = field(default_factory=list)
    copies: dict[str, Path] = field(default_factory=dict)   # name -> copied file or dir
    tool_output: dict[str, str] = field(default_factory=dict)

    def node(self, node_id: int) -> Node:
        return self.cluster.nodes[node_id - 1]

    def partition_dir(self, node_id: int) -> Path:
        return self.node(node_id).log_dir / f"{TOPIC}-{PARTITION}"

    def surviving(self) -> list[Acked]:
        return [a for a in self.acked if a.phase != "lost"]


# ---- clients ------------------------------------------------------------------------------------


def admin(cluster: Cluster):  # noqa: ANN201 - confluent_kafka's AdminClient
    from confluent_kafka.admin import AdminClient

    return AdminClient(quiet({"bootstrap.servers": cluster.bootstrap, "socket.timeout.ms": 3000}))


def create_topic(cluster: Cluster) -> None:
    from confluent_kafka.admin import NewTopic

    topic = NewTopic(TOPIC, num_partitions=1, replica_assignment=[[1, 2]], config=dict(TOPIC_CONFIG))
    client = admin(cluster)   # kept: the futures fail once the client is collected
    for future in client.create_topics([topic]).values():
        future.result(30)


def partition_state(cluster: Cluster) -> tuple[int, list[int]] | None:
    """(leader, ISR) of the partition as a running broker answers, or None."""
    try:
        meta = admin(cluster).list_topics(TOPIC, timeout=3)
    except Exception:  # noqa: BLE001 - a broker going away
        return None
    part = meta.topics.get(TOPIC)
    if part is None or part.error is not None or PARTITION not in part.partitions:
        return None
    p = part.partitions[PARTITION]
    return p.leader, sorted(p.isrs)


def wait_state(cluster: Cluster, leader: int, isr: list[int], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    seen = None
    while time.monotonic() < deadline:
        seen = partition_state(cluster)
        if seen == (leader, sorted(isr)):
            return
        time.sleep(0.3)
    raise AssertionError(f"{TOPIC}-{PARTITION}: wanted leader {leader} ISR {isr}, last saw {seen}")


def produce(sc: Scenario, phase: str, count: int, acks: str = "all") -> None:
    """``count`` records, each acknowledged (one at a time, so each is its own batch-sized step)."""
    from confluent_kafka import Producer

    errors: list[str] = []

    def delivered(err, msg) -> None:  # noqa: ANN001 - librdkafka's callback
        if err is not None:
            errors.append(str(err))
        else:
            sc.acked.append(Acked(phase, msg.offset(), msg.key(), msg.value()))

    producer = Producer(quiet({"bootstrap.servers": sc.cluster.bootstrap, "acks": acks, "linger.ms": 5,
                               "enable.idempotence": False, "retries": 20, "batch.num.messages": 7,
                               "message.timeout.ms": 30000}))
    for i in range(count):
        producer.produce(TOPIC, key=f"{phase}-{i}".encode(), value=f"{phase} value {i} ".encode() * (1 + i % 4),
                         partition=PARTITION, on_delivery=delivered)
    assert producer.flush(40) == 0, "records not delivered"
    assert not errors, errors


def elect(sc: Scenario, election_type: str) -> str:
    done = run_tool(LEADER_ELECTION, "--bootstrap-server", sc.cluster.bootstrap, "--election-type", election_type,
                    "--topic", TOPIC, "--partition", str(PARTITION), check=False)
    return done.stdout + done.stderr


# ---- the steps ------------------------------------------------------------------------------------


def clean_failover(sc: Scenario) -> None:
    """Node 1 stopped cleanly: node 2 leads; node 1 back; a preferred election: node 1 leads."""
    sc.cluster.stop_node(sc.node(1))
    wait_state(sc.cluster, 2, [2])
    sc.elections.append(Election("clean stop of node 1", 2, [2]))
    produce(sc, "second", 30)
    sc.cluster.start_node(sc.node(1))
    wait_state(sc.cluster, 2, [1, 2])
    sc.tool_output["preferred"] = elect(sc, "preferred")
    wait_state(sc.cluster, 1, [1, 2])
    sc.elections.append(Election("preferred election", 1, [1, 2]))


def unclean_failover(sc: Scenario) -> None:
    """Node 2 out, node 1 takes ``lost`` alone and is killed; the leader offline; node 2 elected
    unclean by Kafka's leader-election tool."""
    sc.cluster.stop_node(sc.node(2))
    wait_state(sc.cluster, 1, [1])
    produce(sc, "lost", LOST)
    # unclean elections off a while: whichever comes first once the quorum is back, node 1 fenced
    # or node 2 unfenced, the controller takes the leader offline rather than electing node 2 itself
    set_unclean(sc.cluster, False)
    sc.cluster.stop_node(sc.node(1), kill=True)
    sc.copies["lost"] = copy_tree(sc.partition_dir(1), sc.root / "copies" / "node1-lost")
    sc.cluster.start_node(sc.node(2))
    sc.cluster.wait_ready(brokers=2)
    wait_leader(sc.cluster, -1)
    deadline = time.monotonic() + 60
    while partition_state(sc.cluster) != (2, [2]) and time.monotonic() < deadline:
        sc.tool_output.setdefault("unclean", elect(sc, "unclean"))
        time.sleep(0.5)
    wait_state(sc.cluster, 2, [2], timeout=5)
    sc.elections.append(Election("unclean election of node 2", 2, [2], unclean=True))
    set_unclean(sc.cluster, True)


def set_unclean(cluster: Cluster, enabled: bool) -> None:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    entry = ConfigEntry("unclean.leader.election.enable", str(enabled).lower(),
                        incremental_operation=AlterConfigOpType.SET)
    client = admin(cluster)
    for future in client.incremental_alter_configs([ConfigResource(ResourceType.TOPIC, TOPIC,
                                                                   incremental_configs=[entry])]).values():
        future.result(30)


def wait_leader(cluster: Cluster, leader: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    seen = None
    while time.monotonic() < deadline:
        seen = partition_state(cluster)
        if seen is not None and seen[0] == leader:
            return
        time.sleep(0.3)
    raise AssertionError(f"{TOPIC}-{PARTITION}: wanted leader {leader}, last saw {seen}")


def rejoin(sc: Scenario) -> None:
    produce(sc, "fourth", FOURTH)
    sc.cluster.start_node(sc.node(1))
    wait_state(sc.cluster, 2, [1, 2])
    wait_caught_up(sc)
    sc.truncation_lines = [line for line in sc.node(1).server_log.read_text(errors="replace").splitlines()
                           if "Truncat" in line and f"{TOPIC}-{PARTITION}" in line]


def wait_caught_up(sc: Scenario, timeout: float = 30) -> None:
    """Until node 1's copy ends where node 2's does (the size of their active segments)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if segment_bytes(sc.partition_dir(1)) == segment_bytes(sc.partition_dir(2)):
            return
        time.sleep(0.3)
    raise AssertionError("node 1 did not catch up with node 2")


def segment_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.glob("*.log"))


def copy_tree(src: Path, dst: Path) -> Path:
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(src, dst)
    return dst


def keep_copies(sc: Scenario) -> None:
    """Node 3 (holding the whole metadata log) killed so its files stand still; then the copies."""
    sc.cluster.stop_node(sc.node(3), kill=True)
    out = sc.root / "copies"
    sc.copies["metadata"] = copy_tree(sc.node(3).log_dir / "__cluster_metadata-0", out / "metadata")
    sc.copies["node1"] = copy_tree(sc.partition_dir(1), out / "node1-final")
    sc.copies["node2"] = copy_tree(sc.partition_dir(2), out / "node2-final")


def build(root: Path, elr: bool = True) -> Scenario:
    """Run the whole scenario under ``root``; every node is stopped by its PID on the way out."""
    cluster = replica_cluster(root, 3, SETTINGS, elr)
    sc = Scenario(Path(root), cluster)
    with cluster:
        cluster.start()
        create_topic(cluster)
        wait_state(cluster, 1, [1, 2])
        sc.elections.append(Election("topic created", 1, [1, 2]))
        produce(sc, "first", 50)
        clean_failover(sc)
        produce(sc, "third", 30)
        unclean_failover(sc)
        rejoin(sc)
        keep_copies(sc)
    return sc


# ---- Kafka's own files and tools, read as the oracle ----------------------------------------------


def read_epoch_checkpoint(path: Path) -> list[tuple[int, int]]:
    """A ``leader-epoch-checkpoint`` as Kafka writes it: a version line (0), a count line, then
    ``epoch startOffset`` lines; [(epoch, start offset)]."""
    lines = path.read_text().splitlines()
    assert lines[0] == "0", f"checkpoint version {lines[0]!r}"
    count = int(lines[1])
    entries = [tuple(int(x) for x in line.split()) for line in lines[2:] if line.strip()]
    assert len(entries) == count, (count, entries)
    return [(e[0], e[1]) for e in entries]


TRUNCATED_TO = re.compile(r"Truncating to offset (\d+)")


def truncated_to(lines: list[str]) -> list[int]:
    """The offsets the broker's log said it truncated the partition to."""
    return [int(m.group(1)) for line in lines for m in [TRUNCATED_TO.search(line)] if m]


def cut_log_after(segment: Path, offset: int, out: Path) -> Path:
    """A copy of a KRaft ``.log`` segment that ends with the batch holding ``offset`` (batch
    boundaries from the v2 header: base offset, then the batch length)."""
    data = segment.read_bytes()
    pos = 0
    while pos + 12 <= len(data):
        base, length = struct.unpack_from(">qi", data, pos)
        end = pos + 12 + length
        if base > offset:
            break
        pos = end
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(data[:pos])
    return out


def shell_tree(snapshot: Path, attempts: int = 4) -> dict:
    """Kafka's metadata shell's ``tree /image`` on a snapshot or log segment, as nested dicts (a
    leaf's text under the key ``""``).  Kafka 4.1's shell, given a command, now and then answers
    before it has loaded the file (an empty image, provenance offset -1): then it is asked again."""
    for _ in range(attempts):
        tree = parse_tree(run_tool(METADATA_SHELL, "--snapshot", str(snapshot), "tree", "/image").stdout)
        if shell_provenance(tree) >= 0:
            return tree
    raise AssertionError(f"the metadata shell answered from an empty image {attempts} times on {snapshot}")


def parse_tree(text: str) -> dict:
    root: dict = {}
    stack: list[tuple[int, dict]] = [(-1, root)]
    for line in text.splitlines():
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        while stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1]
        body = line.strip()
        if body.endswith(":"):
            node: dict = {}
            parent[body[:-1]] = node
            stack.append((indent, node))
        else:
            parent[""] = body
    return root


REGISTRATION_FIELD = re.compile(r"(\w+)=(\[[^\]]*\]|\{[^}]*\}|[^,)]*)")
ENDPOINT = re.compile(r"Endpoint\(listenerName='(\w+)', securityProtocol=\w+, host='([^']*)', port=(\d+)\)")


def registration_fields(text: str) -> dict[str, str]:
    """``Name(a=1, b=[1, 2], ...)`` as {field: text}; listeners left out (see ``ENDPOINT``)."""
    inner = ENDPOINT.sub("", text[text.index("(") + 1:])
    return {m.group(1): m.group(2) for m in REGISTRATION_FIELD.finditer(inner)}


def int_list(text: str) -> list[int]:
    return [int(x) for x in text.strip("[]").split(",") if x.strip()]


def shell_partitions(tree: dict) -> dict[tuple[str, int], dict]:
    """Every partition of ``/image/topics/byName``: leader, ISR, ELR, replicas, epochs, recovery."""
    out = {}
    for topic, node in tree.get("topics", {}).get("byName", {}).items():
        for key, leaf in node.items():
            if not key.isdigit():
                continue
            f = registration_fields(leaf[""])
            out[(topic, int(key))] = {
                "leader": int(f["leader"]), "isr": int_list(f["isr"]), "elr": int_list(f["elr"]),
                "lastKnownElr": int_list(f["lastKnownElr"]),
                "replicas": int_list(f["replicas"]), "leaderEpoch": int(f["leaderEpoch"]),
                "partitionEpoch": int(f["partitionEpoch"]), "leaderRecoveryState": f["leaderRecoveryState"],
                "topicId": node["id"][""],
            }
    return out


def shell_brokers(tree: dict) -> dict[int, dict]:
    out = {}
    for broker, leaf in tree.get("cluster", {}).get("brokers", {}).items():
        text = leaf[""]
        f = registration_fields(text)
        out[int(broker)] = {
            "brokerEpoch": int(f["epoch"]), "incarnationId": f["incarnationId"], "fenced": f["fenced"] == "true",
            "inControlledShutdown": f["inControlledShutdown"] == "true",
            "rack": None if f["rack"] == "Optional.empty" else re.sub(r"^Optional\[(.*)\]$", r"\1", f["rack"]),
            "endpoints": [f"{name}://{host}:{port}" for name, host, port in ENDPOINT.findall(text)],
        }
    return out


def shell_controllers(tree: dict) -> dict[int, dict]:
    out = {}
    for controller, leaf in tree.get("cluster", {}).get("controllers", {}).items():
        text = leaf[""]
        out[int(controller)] = {"incarnationId": registration_fields(text)["incarnationId"],
                                "endpoints": [f"{n}://{h}:{p}" for n, h, p in ENDPOINT.findall(text)]}
    return out


def shell_features(tree: dict) -> dict[str, str]:
    """``/image/features``: ``finalized_NAME`` levels and ``metadataVersion`` (a release name)."""
    return {key: leaf.get("", "") for key, leaf in tree.get("features", {}).items()}


def shell_configs(tree: dict) -> dict[str, dict[str, str]]:
    """``/image/configs``: ``TYPE:name`` -> {config: value}."""
    return {resource: {name: leaf[""] for name, leaf in node.items()}
            for resource, node in tree.get("configs", {}).items()}


def shell_provenance(tree: dict) -> int:
    """The offset of the last record the shell applied (``provenance: offset N, epoch E, time T``)."""
    text = tree["provenance"][""]
    m = re.match(r"offset (-?\d+),", text)
    assert m, text
    return int(m.group(1))
