from typing import Any, Callable

INTERFACE: int

def configure_batch(batch_class: type[Any], /) -> None: ...
def batch_hop(buf: Any, pos: int, end: int, max_length: int, copy_max: int,
              crc: Callable[[Any], int], file: str, position: int, /) -> tuple[Any, bytes] | None: ...
