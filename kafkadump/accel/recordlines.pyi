from typing import Any, Callable

INTERFACE: int

def configure(record_class: type[Any], /) -> None: ...
def format_lines(records: list[Any], segs: tuple[str, ...], mode: int,
                 val_json: Callable[[bytes], str], dumps: Callable[[str], str], /) -> str | None: ...
def format_run(data: Any, pos: int, end: int, limit: int, base_offset: int, base_ts: int, max_ts: int,
               log_append: bool, segs: tuple[str, ...], mode: int, val_json: Callable[[bytes], str],
               dumps: Callable[[str], str], /) -> tuple[str, int, int] | None: ...
