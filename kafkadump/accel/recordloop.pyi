from typing import Any

INTERFACE: int

def configure(record_class: type[Any], /) -> None: ...
def record_run(data: Any, pos: int, end: int, n: int, stop_n: int, count: int, base_offset: int, base_ts: int,
               max_ts: int, log_append: bool, ts_type: str, source: str, shift: int,
               last_offset_delta: int, /) -> tuple[list[Any], int, int, bool, bool, int | None] | None: ...
def record_check(data: Any, pos: int, end: int, count: int, base_offset: int, base_ts: int, max_ts: int,
                 log_append: bool, last_offset_delta: int, /) -> tuple[int, bool, int | None] | None: ...
