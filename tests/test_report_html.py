"""``kafkadump report``: the incident file of a clean log dir, a damaged one, one with a hanging transaction and
an unclean election (its names hostile), and a capture (its client id hostile).

The page's text is checked against the builders' facts; then one headless Chromium session (Debian's
``chromium`` and ``chromium-driver``, driven by selenium) opens every file: no console error, no request but
the file itself, the verdict visible without scrolling at 1280 and 400 pixels wide, hostile names shown as
text with no script run.  Without chromium the browser tests skip, saying so (CI installs it).
"""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import capture_builders as CB
import metadata_builders as M
import pytest
from forensics_builders import java_partition, kv_batch, make_offsets_logdir, make_txn_logdir, txn_record
from logdir_helpers import T0, Seg, batch, flip, make_logdir, name, write

ROOT = Path(__file__).resolve().parent.parent
# every way out of a text node or an attribute the page could get wrong, and a script that says it ran
SCRIPT = "window.__pwned=1;document.title='pwned'"
HOSTILE_TOPIC = f'evil"onload="{SCRIPT}"<script>{SCRIPT}</script>'   # no '/': a directory name
HOSTILE_FILE = f'<img src=x onerror="{SCRIPT}">.log'
HOSTILE_TEXT = f'</svg></title><script>{SCRIPT}</script>"onload="{SCRIPT}'   # topic, key, client id


def kafkadump(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "kafkadump", *args], capture_output=True, text=True, env=env,
                          timeout=300)


# --- the inputs ------------------------------------------------------------------------------------

def clean_logdir(root: Path) -> Path:
    d = root / "clean"
    write(os.path.join(d, "orders-0", name(0, ".log")), Seg([batch(0, 3, ts=T0), batch(3, 2, ts=T0 + 60_000),
                                                              batch(5, 4, ts=T0 + 120_000)]).data)
    write(os.path.join(d, "orders-1", name(0, ".log")), Seg([batch(0, 2, ts=T0 + 5)]).data)
    return d


def damaged_logdir(root: Path) -> Path:
    d = root / "damaged"
    make_logdir(d)
    return d


def incident_logdir(root: Path) -> Path:
    """Hanging transactions (make_txn_logdir), an unclean election in the metadata log, a consumer group's
    commits; a hostile topic name (a damaged partition's directory, a metadata topic), a hostile file name
    and a hostile transactional id (a key of __transaction_state)."""
    d = root / "incident"
    make_txn_logdir(d)
    make_offsets_logdir(d)
    seg = Seg([batch(0, 3, ts=T0), batch(3, 3, ts=T0 + 1000), batch(6, 3, ts=T0 + 2000)])
    write(os.path.join(d, f"{HOSTILE_TOPIC}-0", name(0, ".log")), flip(seg.data, seg.batches[1].position + 40))
    write(os.path.join(d, HOSTILE_FILE), b"not a segment at all\n")
    tid = HOSTILE_TEXT
    write(os.path.join(d, f"__transaction_state-{java_partition(tid)}", name(0, ".log")),
          Seg([kv_batch(0, [txn_record(tid, "CompleteCommit", 900, 1, update=T0)], ts=T0)]).data)
    log = M.MetaLog()
    log.rec("FeatureLevelRecord", 0, name="metadata.version", featureLevel=20)
    for bid in (1, 2, 3):
        M.broker(log, bid, 10 + bid)
        M.unfence(log, bid, 10 + bid)
    M.topic(log, HOSTILE_TEXT, 1)
    M.partition(log, 1, 0, [1, 2, 3], [1, 2, 3], 1)
    M.change(log, 1, 0, isr=[1])
    M.change(log, 1, 0, leader=-1)
    M.change(log, 1, 0, leader=3, isr=[3])      # 3 was not in the ISR: unclean
    write(os.path.join(d, "__cluster_metadata-0", name(0, ".log")), bytes(log.data))
    return d


def capture_file(root: Path) -> Path:
    """ApiVersions refused (error 35) then Metadata over one connection; the client id hostile."""
    c = CB.Conversation()
    c.send("c", CB.apiversions_v3_request(corr=1, client=HOSTILE_TEXT))
    c.send("s", CB.apiversions_v0_response(corr=1, error=35))
    c.send("c", CB.metadata_v1_request(corr=2, client=HOSTILE_TEXT))
    c.send("s", CB.metadata_v1_response(corr=2))
    c.close()
    p = root / "traffic.pcap"
    p.write_bytes(CB.pcap([(t, ip) for t, ip, _ in c.packets])[0])
    return p


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict:
    """name -> (exit status, stderr, the page's path, its text)."""
    root = tmp_path_factory.mktemp("report")
    inputs = {"clean": [clean_logdir(root)], "damaged": [damaged_logdir(root)],
              "incident": [incident_logdir(root)], "capture": [capture_file(root)]}
    out = {}
    for key, paths in inputs.items():
        page = root / f"{key}.html"
        done = kafkadump("report", *map(str, paths), "-o", str(page))
        out[key] = (done.returncode, done.stderr, page, page.read_text(encoding="utf-8") if page.exists() else "")
    return out


# --- the page's text -------------------------------------------------------------------------------

def visible(page: str) -> str:
    """The page's text as a reader gets it (tags dropped, entities decoded), roughly."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def test_exit_status_follows_the_one_rule_and_says_one_line(reports):
    assert reports["clean"][0] == 0
    assert reports["damaged"][0] == 1
    assert reports["incident"][0] == 1
    assert reports["capture"][0] == 0        # a refused request is no problem of the bytes (as capture exits)
    for key, (code, err, page, _) in reports.items():
        written = [line for line in err.splitlines() if "report written" in line]
        verdict = {0: "clean", 1: "errors"}[code] if key != "capture" else "clean"
        assert len(written) == 1 and written[0].startswith(f"kafkadump: report written: {page}: {verdict}, "), key


def test_the_verdict_comes_first(reports):
    for key, verdict in (("clean", "CLEAN"), ("damaged", "ERRORS"), ("incident", "ERRORS"), ("capture", "CLEAN")):
        page = reports[key][3]
        body = page[page.index("<main>"):]
        assert body.startswith('<main><header class="verdict') and f'<span class="tag">{verdict}</span>' in body[:300]
    assert "nothing wrong found" in visible(reports["clean"][3])
    damaged = visible(reports["damaged"][3])
    assert "What: crc-mismatch ×1," in damaged
    assert "Where: damaged-0" in damaged
    assert "1 requests on 1 connections" not in visible(reports["capture"][3])


def test_findings_carry_file_byte_offset_offsets_and_a_hexdump(reports):
    page = reports["damaged"][3]
    findings = page[page.index('id="findings"'):page.index('id="timelines"')]
    row = next(r for r in findings.split("<tr") if ">crc-mismatch<" in r)
    cells = [visible(c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row)]
    assert cells[0] == "damaged-0" and cells[3] == "00000000000000000000.log"
    assert cells[5].startswith("batch ") and cells[7] == "hexdump"
    anchor = re.search(r'href="#(hex-\d+)">hexdump', row).group(1)
    dump = page[page.index(f'id="{anchor}"'):]
    assert "crc-mismatch" in dump[:4000] and '<span class="f' in dump[:4000]


def test_pictures_are_inline_svg(reports):
    damaged, incident = reports["damaged"][3], reports["incident"][3]
    assert 'id="timelines"' in damaged and damaged.count("<svg") >= 3
    assert 'id="bytemaps"' in damaged and "damaged" in visible(damaged[damaged.index('id="bytemaps"'):])
    text = visible(incident)
    assert "hanging" in text and "kafka-transactions.sh --bootstrap-server <host:port> abort --topic orders " \
                                 "--partition 0 --start-offset 7" in text
    assert "unclean election at offset" in text
    assert 'id="lag"' in incident
    capture = visible(reports["capture"][3])
    assert "2 requests, 1 failed" in capture and "error code 35" in capture


def test_custody_lists_every_file_with_its_sha256(reports):
    import hashlib

    page = reports["damaged"][3]
    custody = visible(page[page.index('id="custody"'):])
    for f in sorted(Path(reports["damaged"][2]).parent.glob("damaged/*/*")):
        assert str(f) in custody
        assert hashlib.sha256(f.read_bytes()).hexdigest() in custody
    assert "kafkadump report" in custody and ("compiled hot path" in custody or "pure Python" in custody)


def test_hostile_names_are_text(reports):
    for key in ("incident", "capture"):
        page = reports[key][3]
        assert "<script>window" not in page and 'onerror="window' not in page and 'onload="window' not in page
        assert "</svg></title>" not in page
    text = visible(reports["incident"][3])
    assert HOSTILE_TEXT in text and HOSTILE_FILE in text and HOSTILE_TOPIC in text
    assert HOSTILE_TEXT in visible(reports["capture"][3])


def test_self_contained_and_locked_down(reports):
    for _, _, _, page in reports.values():
        assert "Content-Security-Policy" in page and "default-src 'none'" in page
        assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", page)
        assert "url(" not in page and "@import" not in page
        assert page.count("<script") == 1 and page.count("<style") == 1


def test_redact_masks_key_and_value_bytes_in_the_hexdumps(tmp_path):
    seg = Seg([batch(0, 3, ts=T0), batch(3, 3, ts=T0 + 1000)])
    write(os.path.join(tmp_path, "t-0", name(0, ".log")), flip(seg.data, seg.batches[0].position + 30))
    plain, masked = tmp_path / "plain.html", tmp_path / "masked.html"
    assert kafkadump("report", str(tmp_path / "t-0"), "-o", str(plain)).returncode == 1
    assert kafkadump("report", str(tmp_path / "t-0"), "-o", str(masked), "--redact", "keys,values").returncode == 1
    assert "v0-xxxxx" in visible(plain.read_text()) and "v0-xxxxx" not in visible(masked.read_text())
    assert "redacted: keys,values" in visible(masked.read_text())


def test_usage_errors_are_exit_2(tmp_path):
    done = kafkadump("report", str(tmp_path / "nothing"), "-o", str(tmp_path / "r.html"))
    assert done.returncode == 2 and "no such file" in done.stderr
    seg = tmp_path / name(0, ".log")
    seg.write_bytes(Seg([batch(0, 1)]).data)
    done = kafkadump("report", str(seg), "-o", str(seg))
    assert done.returncode == 2 and "is one of the inputs" in done.stderr
    assert seg.read_bytes() == Seg([batch(0, 1)]).data


# --- in a real browser -----------------------------------------------------------------------------

CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")
NEEDS_BROWSER = pytest.mark.skipif(CHROMIUM is None or DRIVER is None,
                                   reason="needs Debian's chromium and chromium-driver (apt-get install chromium "
                                          "chromium-driver; .ci/run installs them)")


@pytest.fixture(scope="module")
def browser():
    webdriver = pytest.importorskip("selenium.webdriver", reason="needs selenium (the test extra)")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    profile = tempfile.mkdtemp(prefix="kd-chromium-")
    # without these flags Chromium reaches for the network on its own (updates, sync, QUIC probes)
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", f"--user-data-dir={profile}", "--window-size=1280,900"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def _open(driver, page: Path, width: int) -> list[str]:
    """Open ``page`` at ``width`` CSS pixels; the URLs it requested (from the performance log)."""
    import json

    driver.set_window_size(width, 900)
    driver.get_log("performance")
    driver.get_log("browser")
    driver.get(page.as_uri())
    driver.execute_script("return document.readyState")
    urls = []
    for entry in driver.get_log("performance"):
        msg = json.loads(entry["message"])["message"]
        if msg["method"] == "Network.requestWillBeSent":
            urls.append(msg["params"]["request"]["url"])
    return urls


@NEEDS_BROWSER
@pytest.mark.parametrize("width", [1280, 400])
def test_in_chromium(reports, browser, width, tmp_path):
    for key, (_, _, page, _) in reports.items():
        urls = _open(browser, page, width)
        assert urls == [page.as_uri()], (key, urls)
        errors = [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
        assert errors == [], (key, errors)
        assert browser.execute_script("return window.__pwned") is None, key
        assert browser.title.startswith("kafkadump incident report"), key
        assert browser.execute_script("return document.documentElement.className") == "js"   # its own script ran
        inner = browser.execute_script("return window.innerWidth")
        rect = browser.execute_script("var r=document.getElementById('verdict').getBoundingClientRect();"
                                      "return [r.left, r.top, r.right, r.bottom, window.innerHeight];")
        assert rect[0] >= 0 and rect[1] >= 0 and rect[2] <= inner and rect[3] <= rect[4], (key, width, rect)
        scroll = browser.execute_script("return document.documentElement.scrollWidth")
        assert scroll <= inner + 1, (key, width, scroll)      # nothing wider than the window
        shot = tmp_path / f"{key}-{width}.png"
        assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 5000
    hostile = browser.execute_script("return document.body.innerText")
    assert HOSTILE_TEXT.replace('"', "") in hostile.replace('"', "") or "window.__pwned" in hostile


def test_everything_bounded_is_said(tmp_path, monkeypatch):
    """With the caps lowered: pictures for the partitions with problems first, then the sample; tables cut;
    what was left out said on the page; the manifest still lists every file."""
    import io

    from kafkadump.base.status import Tally
    from kafkadump.render import html_report
    from kafkadump.reports import incident

    for k in range(12):
        seg = Seg([batch(0, 2, ts=T0), batch(2, 2, ts=T0 + 1000), batch(4, 2, ts=T0 + 2000)])
        data = flip(seg.data, seg.batches[1].position + 40) if k % 4 == 0 else seg.data
        write(os.path.join(tmp_path, "logs", f"t-{k}", name(0, ".log")), data)
    for attr, value in (("MAX_TIMELINES", 4), ("CLEAN_SAMPLE", 1), ("MAX_MAPS", 2), ("MAX_HEXDUMPS", 1)):
        monkeypatch.setattr(incident, attr, value)
    for attr, value in (("MAX_PARTITION_ROWS", 5), ("MAX_CUSTODY_ROWS", 4), ("MAX_FINDING_GROUPS", 2)):
        monkeypatch.setattr(html_report, attr, value)
    tally = Tally()
    inc = incident.incident_report([str(tmp_path / "logs")], tally)
    assert [t.partition for t in inc.timelines] == [0, 4, 8, 1]    # the 3 damaged ones, then 1 clean
    assert len(inc.maps) == 2 and len(inc.hexdumps) == 1 and inc.hexdumps_left_out == 1
    out = io.StringIO()
    assert html_report.write_report_html(inc, out, {"tool": "kafkadump"}) == "errors"
    page = out.getvalue()
    text = visible(page)
    assert "timelines: 4 of 12 partitions drawn (3 of 3 with problems, 1 clean as a sample)" in text
    assert "byte maps: 2 of 3 damaged segments drawn" in text
    assert "hexdumps: the first 1 damaged items embedded" in text and "1 more damaged items not embedded" in text
    assert "7 more clean partitions not listed" in text
    assert text.count("timelines") >= 1 and page.count('<h3 id="t-') == 4
    assert "more partition and code groups" in text
    manifest = page[page.index("sha256sum lines"):]
    assert all(f"t-{k}/{name(0, '.log')}" in manifest for k in range(12))
    assert tally.problems > 0 and tally.exit_status == 1


def test_copies_of_a_partition_are_compared(tmp_path):
    """The same topic id and partition under two brokers' log dirs: diff's verdict and where they part."""
    meta = b"version: 0\ntopic_id: 1qqJytXMSWeR5tv_Z0us9g\n"
    same = [batch(0, 3, ts=T0), batch(3, 3, ts=T0 + 1000)]
    write(os.path.join(tmp_path, "b1", "orders-0", name(0, ".log")), Seg(same + [batch(6, 2, ts=T0 + 2000)]).data)
    write(os.path.join(tmp_path, "b2", "orders-0", name(0, ".log")),
          Seg(same + [batch(6, 2, ts=T0 + 2000, leader_epoch=1)]).data)
    for b in ("b1", "b2"):
        write(os.path.join(tmp_path, b, "orders-0", "partition.metadata"), meta)
    page = tmp_path / "r.html"
    done = kafkadump("report", str(tmp_path / "b1"), str(tmp_path / "b2"), "-o", str(page))
    text = visible(page.read_text())
    assert done.returncode == 1, done.stderr
    assert "1 copy of a partition diverged" in text
    section = text[text.index("Copies of a partition compared"):]
    assert f"orders-0 {tmp_path / 'b1' / 'orders-0'} {tmp_path / 'b2' / 'orders-0'} diverged 5 0 0 2" in section
    assert "different offsets 6–7 (leader epochs 0 / 1): leaderEpoch" in section
