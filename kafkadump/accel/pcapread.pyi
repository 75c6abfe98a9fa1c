from typing import Any

INTERFACE: int

def pcap_run(buf: Any, pos: int, big_endian: bool, nanoseconds: bool, linktype: int, release_at: int,
             limit: int, /) -> tuple[list[Any], int, int]: ...
def pcap_times(buf: Any, big_endian: bool, nanoseconds: bool, /) -> tuple[float | None, float | None, int]: ...
