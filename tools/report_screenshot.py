#!/usr/bin/env python3
"""Make docs/report.png and docs/report-pictures.png, the README's pictures of ``kafkadump report``.

Builds a small broker log dir with the tests' builders (a damaged partition,
hanging transactions, a consumer group's commits, an unclean election in the
metadata log), writes its report and photographs the top of it in headless
Chromium (Debian's ``chromium`` and ``chromium-driver``; ``selenium``).

    python3 tools/report_screenshot.py [--out docs/report.png] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))


def build_logdir(d: Path) -> None:
    import metadata_builders as M
    from forensics_builders import make_offsets_logdir, make_txn_logdir
    from logdir_helpers import T0, Seg, batch, flip, name, write

    make_txn_logdir(d)
    make_offsets_logdir(d)
    seg = Seg([batch(i * 4, 4, ts=T0 + i * 30_000) for i in range(12)] +
              [batch(60 + i * 4, 4, ts=T0 + 400_000 + i * 30_000) for i in range(8)])
    write(os.path.join(d, "payments-2", name(0, ".log")), flip(seg.data, seg.batches[5].position + 70))
    log = M.MetaLog()
    log.rec("FeatureLevelRecord", 0, name="metadata.version", featureLevel=20)
    for bid in (1, 2, 3):
        M.broker(log, bid, 10 + bid)
        M.unfence(log, bid, 10 + bid)
    M.topic(log, "payments", 1)
    M.partition(log, 1, 2, [1, 2, 3], [1, 2, 3], 1)
    M.change(log, 1, 2, isr=[1, 2])
    M.change(log, 1, 2, leader=2, isr=[2])
    M.change(log, 1, 2, isr=[1, 2])
    M.change(log, 1, 2, isr=[1])
    M.change(log, 1, 2, leader=-1)
    M.change(log, 1, 2, leader=3, isr=[3])
    write(os.path.join(d, "__cluster_metadata-0", name(0, ".log")), bytes(log.data))


def shoot(page: Path, png: Path, width: int, height: int, pictures: Path | None = None) -> None:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    profile = tempfile.mkdtemp(prefix="kd-chromium-")
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 f"--user-data-dir={profile}", "--hide-scrollbars"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    try:
        driver.set_window_size(width, height)
        driver.get(page.as_uri())
        driver.save_screenshot(str(png))
        if pictures is not None:   # from the first timeline of a damaged partition to the leaders' history
            top, bottom = driver.execute_script(
                "var a=document.querySelector('#timelines h3');"
                "var b=document.getElementById('lag')||document.getElementById('leaders');"
                "return [a.getBoundingClientRect().top + window.scrollY - 8,"
                " b.getBoundingClientRect().top + window.scrollY - 8];")
            shot = driver.execute_cdp_cmd("Page.captureScreenshot", {
                "format": "png", "captureBeyondViewport": True,
                "clip": {"x": 0, "y": top, "width": width, "height": min(bottom - top, 1600), "scale": 1}})
            import base64

            pictures.write_bytes(base64.b64decode(shot["data"]))
    finally:
        driver.quit()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "report.png")
    ap.add_argument("--keep", type=Path, default=None, help="build the log dir and the page here")
    ap.add_argument("--width", type=int, default=1100)
    ap.add_argument("--height", type=int, default=760)
    args = ap.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="kd-report-"))
    logdir = work / "kafka-logs"
    if not logdir.exists():
        build_logdir(logdir)
    page = work / "incident.html"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    subprocess.run([sys.executable, "-m", "kafkadump", "report", str(logdir), "-o", str(page)], env=env, cwd=work)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    pictures = args.out.with_name(args.out.stem + "-pictures.png")
    shoot(page, args.out, args.width, args.height, pictures)
    for png in (args.out, pictures):
        print(f"{png} ({png.stat().st_size} bytes) from {page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
