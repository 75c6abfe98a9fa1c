"""kafka-dump-log.sh line format (stub; being written)."""


def file_header(path, buf) -> str:
    return f"Dumping {path}\n"


def render(item, records=False, keep=None) -> str:
    return ""
