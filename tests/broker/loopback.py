"""Kafka traffic captured on the loopback interface, and tshark's count of the Kafka PDUs in it.

``LoopbackCapture(port, path)`` runs ``dumpcap`` (Debian's ``tshark`` package) on ``lo`` with a
capture filter on one TCP port, writing a classic pcap; it is recorded by its PID and stopped by it
(SIGINT: dumpcap finishes the file and prints its counts). ``tshark_pdus(path, ports)`` counts the
PDUs tshark's Kafka dissector finds when told the Kafka ports (``-d tcp.port==P,kafka``): the
oracle for the frames kafkadump's ``capture`` cuts from the same streams.
"""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import time
from pathlib import Path


def missing_capture_tools() -> str | None:
    """Why traffic cannot be captured and counted here (dumpcap or tshark missing), or None."""
    for tool in ("dumpcap", "tshark"):
        if shutil.which(tool) is None:
            return f"{tool} is not on PATH (Debian: apt-get install tshark)"
    return None


class LoopbackCapture:
    """dumpcap on loopback, filtered on one TCP port, into ``path`` (classic pcap); stopped by its PID."""

    def __init__(self, port: int, path: Path, timeout: float = 30):
        exe = shutil.which("dumpcap")
        if exe is None:
            raise RuntimeError("dumpcap is not on PATH (Debian: apt-get install tshark)")
        self.log = path.with_name(path.name + ".dumpcap.log")
        with open(self.log, "wb") as err:
            self.process = subprocess.Popen([exe, "-i", "lo", "-f", f"tcp port {port}", "-P", "-B", "64",
                                             "-w", str(path)], stdout=subprocess.DEVNULL, stderr=err,
                                            stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + timeout
        while b"Capturing on" not in self.log.read_bytes():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"dumpcap did not start: {self.log.read_text(errors='replace')[-2000:]}")
            time.sleep(0.1)

    def stop(self) -> dict:
        """SIGINT by its PID, then dumpcap's own counts: packets captured, received and dropped."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        text = self.log.read_text(errors="replace")
        counts: dict = {"log": text.strip().splitlines()[-3:]}
        m = re.search(r"Packets captured: (\d+)", text)
        if m:
            counts["captured"] = int(m.group(1))
        m = re.search(r"received/dropped on interface '[^']*': (\d+)/(\d+)", text)
        if m:
            counts["received"], counts["dropped"] = int(m.group(1)), int(m.group(2))
        return counts


def tshark_pdus(path: str, ports: list[int]) -> dict[str, int]:
    """The Kafka PDUs tshark's dissector finds in ``path``: those sent to one of ``ports`` (requests),
    the others (responses), and the packets it marks malformed."""
    decode_as = [a for p in ports for a in ("-d", f"tcp.port=={p},kafka")]
    argv = ["tshark", "-r", path, *decode_as, "-Y", "kafka or _ws.malformed", "-T", "fields", "-E", "occurrence=a",
            "-E", "aggregator=,", "-e", "tcp.dstport", "-e", "kafka.len", "-e", "_ws.malformed"]
    requests = responses = malformed = 0
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            dport, lengths, bad = (line.rstrip("\n").split("\t") + ["", "", ""])[:3]
            pdus = sum(1 for x in lengths.split(",") if x)
            if dport and int(dport.split(",")[0]) in ports:
                requests += pdus
            else:
                responses += pdus
            malformed += bool(bad)
    if proc.returncode:
        raise RuntimeError(f"tshark exited {proc.returncode} on {path}")
    return {"frames": requests + responses, "requests": requests, "responses": responses, "malformed": malformed}
