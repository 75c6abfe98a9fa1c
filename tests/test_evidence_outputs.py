"""Evidence and outputs: a failed carve never removes what kafkadump did not create, SIGTERM leaves
no partial file, a full disk is an I/O error naming the file, non-regular inputs are refused or
read with a bound, and capture JSON stays UTF-8 whatever the file's name."""

from __future__ import annotations

import json
import os
import resource
import signal
import stat
import subprocess
import sys
import threading

import builders as bld
import capture_builders as cb
import pytest
from measured import RSS_LIMIT_MB, kd

from kafkadump.sources import segment as S

SEG = "00000000000000000000.log"


def segment(path, batches: int = 50) -> bytes:
    data = b"".join(bld.simple_batch(i * 3, 3, value_size=200).data for i in range(batches))
    path.write_bytes(data)
    return data


def run(args, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kafkadump", *args], capture_output=True, **kw)


def _small_files():
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))  # a disk that fills after 4 KiB


def leftovers(directory) -> list[str]:
    return [n for n in os.listdir(directory) if n.endswith(".carving")]


def test_failed_carve_keeps_the_existing_output(tmp_path):
    segment(tmp_path / SEG)
    out = tmp_path / "out.log"
    out.write_bytes(b"evidence that was here before")
    r = run(["carve", "--output", str(out), "--force", str(tmp_path / SEG)], preexec_fn=_small_files)
    assert r.returncode == 2
    assert r.stderr.decode().strip() == f"kafkadump: {out}: cannot write: File too large"
    assert out.read_bytes() == b"evidence that was here before"
    assert not leftovers(tmp_path)


def test_failed_carve_creates_nothing(tmp_path):
    segment(tmp_path / SEG)
    out = tmp_path / "new.log"
    r = run(["carve", "--output", str(out), str(tmp_path / SEG)], preexec_fn=_small_files)
    assert r.returncode == 2 and not out.exists() and not leftovers(tmp_path)


def test_carve_output_replaces_with_force(tmp_path):
    data = segment(tmp_path / SEG)
    out = tmp_path / "out.log"
    out.write_bytes(b"old")
    r = run(["carve", "--json", "--output", str(out), "--force", str(tmp_path / SEG)])
    assert r.returncode == 0, r.stderr
    assert out.read_bytes() == data and not leftovers(tmp_path)
    assert stat.S_IMODE(out.stat().st_mode) == 0o644


def test_carve_refuses_to_replace_a_device_or_fifo(tmp_path):
    segment(tmp_path / SEG)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    r = run(["carve", "--output", str(fifo), "--force", str(tmp_path / SEG)], timeout=60)
    assert r.returncode == 2 and b"not a regular file" in r.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_sigterm_leaves_no_partial_output(tmp_path):
    """A big damaged segment keeps carve busy; SIGTERM: no output file, no temporary file."""
    seg = tmp_path / SEG
    with open(seg, "wb") as f:
        for i in range(3000):
            d = bytearray(bld.simple_batch(i * 3, 3, value_size=2000).data)
            if i % 2:
                d[-1] ^= 1
            f.write(d)
    out = tmp_path / "out.log"
    p = subprocess.Popen([sys.executable, "-m", "kafkadump", "carve", "--json", "--output", str(out), str(seg)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.readline()  # carving has begun (the temporary file exists)
    p.send_signal(signal.SIGTERM)
    p.communicate()
    assert p.returncode == -signal.SIGTERM
    assert not out.exists() and not leftovers(tmp_path)


def test_full_stdout_is_an_io_error():
    with open("/dev/full", "w") as full:
        r = subprocess.run([sys.executable, "-m", "kafkadump", "records", "--json",
                            str(bld_fixture())], stdout=full, stderr=subprocess.PIPE, text=True)
    assert r.returncode == 2
    assert json.loads(r.stderr) == {"type": "error", "exitStatus": 2,
                                    "message": "standard output: cannot write: No space left on device"}


def bld_fixture():
    from conftest import FIXTURES

    return FIXTURES / "segment-v2" / SEG


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
@pytest.mark.parametrize("command", ["records", "batches", "verify-crc", "carve", "capture", "dump"])
def test_character_devices_are_refused(device, command):
    args = [command, device] if command != "dump" else [command, "--type", "leader-epoch-checkpoint", device]
    rc, _, err, rss = kd(*args)
    assert rc == 2 and "character device" in err, err
    assert rss < RSS_LIMIT_MB


@pytest.mark.parametrize("command", ["records", "verify-crc", "capture"])
def test_a_fifo_without_writer_does_not_hang(tmp_path, command):
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    r = run([command, str(fifo)], timeout=60)
    # nothing to read: said, exit 2, in every command (capture too, since issue 27)
    assert r.returncode == 2 and b"empty" in r.stderr


def test_a_fifo_is_read_with_a_bound(tmp_path):
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    stop = threading.Event()

    def flood():
        try:
            fd = os.open(fifo, os.O_WRONLY)
        except OSError:
            return
        chunk = b"\x00" * (1 << 20)
        try:
            while not stop.is_set():
                os.write(fd, chunk)
        except OSError:
            pass
        finally:
            os.close(fd)

    t = threading.Thread(target=flood, daemon=True)
    t.start()
    rc, _, err, rss = kd("records", str(fifo))
    stop.set()
    assert rc == 2 and f"more than {S.MAX_STREAM} bytes from a pipe" in err
    assert rss < RSS_LIMIT_MB


def test_a_fifo_holding_a_segment_is_decoded(tmp_path):
    data = segment(tmp_path / SEG, 5)
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)

    def feed():
        with open(fifo, "wb") as f:
            f.write(data)

    t = threading.Thread(target=feed, daemon=True)
    t.start()
    r = run(["batches", "--json", str(fifo)], timeout=60)
    t.join(5)
    assert r.returncode == 0, r.stderr
    assert len(r.stdout.splitlines()) == 5


def test_capture_json_of_a_non_utf8_name_is_utf8(tmp_path):
    seg = cb.ipv4_tcp("10.0.0.1", "10.0.0.2", 40000, 9092, 1000, 1, 0x18, cb.metadata_v1_request(1))
    name = os.fsencode(str(tmp_path)) + b"/caf\xe9-\xff.pcap"
    with open(name, "wb") as f:
        f.write(cb.pcap([(1.0, seg)])[0])
    r = subprocess.run([sys.executable, "-m", "kafkadump", "capture", "--json", name], capture_output=True)
    text = r.stdout.decode("utf-8")  # valid UTF-8, or this raises
    docs = [json.loads(line) for line in text.splitlines()]
    assert docs and all(os.fsencode(d["file"]) == name for d in docs if "file" in d)
