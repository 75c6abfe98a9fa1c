INTERFACE: int

def record_columns(data: object, pos: int, end: int, n: int, stop_n: int, count: int, base_offset: int, base_ts: int,
                   max_ts: int, log_append: bool, batch_position: int, flags: int, ts_min: int, ts_max: int,
                   bufs: list[bytearray], /) -> tuple[int, int, bool] | None: ...
