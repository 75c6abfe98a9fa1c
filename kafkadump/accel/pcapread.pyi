from typing import Any

def pcap_run(buf: Any, pos: int, big_endian: bool, nanoseconds: bool, linktype: int, release_at: int,
             limit: int, /) -> tuple[list[Any], int, int]: ...
