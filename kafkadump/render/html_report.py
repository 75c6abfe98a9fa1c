"""``kafkadump report``: the incident as one self-contained HTML file.

Reads the gathered reports (:class:`~kafkadump.reports.incident.Incident`) and the
triage object (:mod:`kafkadump.objects.logdir_objects`); decodes nothing.  The
page, in order: the verdict (what is wrong, where, how bad), the findings by
partition and code (each with its file, byte offset, offsets and a link to the
annotated hexdump of its damaged item), the pictures (:mod:`.svg_charts`), the
partitions, the embedded hexdumps and the chain of custody.

Self-contained and safe: no URL but fragment links, system fonts, one
``<style>`` and one ``<script>`` allowed by their SHA-256 in a
Content-Security-Policy whose ``default-src`` is ``'none'``; everything from
the input escaped (:func:`.svg_charts.esc`).  With JavaScript off the page is
complete; the script only adds a filter box over the findings.
"""

from __future__ import annotations

import base64
import hashlib
import os
from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TextIO

from kafkadump.base.findings import DESCRIPTION, SEVERITY, Code
from kafkadump.render.svg_charts import (
    byte_map_svg,
    bytes_text,
    capture_svg,
    esc,
    lag_svg,
    leaders_svg,
    timeline_svg,
    transactions_svg,
)

if TYPE_CHECKING:
    from kafkadump.reports.incident import Hexdump, Incident

MAX_FINDING_GROUPS = 300     # (partition, code) groups listed; the rest counted
FINDINGS_PER_GROUP = 5       # findings listed per group; the rest counted
MAX_PARTITION_ROWS = 2000    # partition table rows (problems first)
MAX_CUSTODY_ROWS = 1000      # files listed with size, mtime and SHA-256 in the table
MAX_MANIFEST_LINES = 20_000  # files listed in the sha256sum manifest
MAX_HEX_BYTES = 2048         # bytes of one hexdump shown
LOOSE = "files outside partitions"

STYLE = """
:root{--ink:#1d2329;--muted:#5f6b76;--line:#dde2e7;--bad:#c62828;--warn:#b26a00;--ok:#2e7d4f;--bg:#fff}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);background:#f4f6f8}
main{max-width:1100px;margin:0 auto;padding:12px}
section,header.verdict{overflow-wrap:break-word;background:var(--bg);border:1px solid var(--line);border-radius:8px;padding:12px 16px;margin:0 0 12px}
h1{font-size:20px;margin:0 0 6px}h2{font-size:17px;margin:0 0 8px}h3{font-size:14px;margin:12px 0 4px}
.verdict{border-left:8px solid var(--ok)}.verdict.errors{border-left-color:var(--bad)}
.verdict.warnings{border-left-color:var(--warn)}
.verdict .tag{display:inline-block;padding:1px 8px;border-radius:4px;color:#fff;background:var(--ok);font-size:13px;
margin-right:6px;vertical-align:2px}
.verdict.errors .tag{background:var(--bad)}.verdict.warnings .tag{background:var(--warn)}
.verdict ul{margin:4px 0 6px;padding-left:18px}.verdict li{margin:2px 0}
.meta,.note{color:var(--muted);font-size:12px}
nav{font-size:13px;margin:0 0 12px;display:flex;flex-wrap:wrap;gap:4px 12px}
a{color:#1f5fbf}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{border-bottom:1px solid var(--line);padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f0f3f6;font-weight:600}
td.n{text-align:right;font-variant-numeric:tabular-nums}
td.c{white-space:nowrap}
.scroll{overflow-x:auto}
code,pre,.mono{font-family:ui-monospace,"SFMono-Regular",Menlo,Consolas,monospace;font-size:12px}
.path{word-break:break-all}
td.msg{min-width:16em}td.file{min-width:15.5em}
.sev-error{color:var(--bad);font-weight:600}.sev-warning{color:var(--warn);font-weight:600}.sev-info{color:var(--muted)}
details{margin:4px 0}summary{cursor:pointer}
.chart{display:block;max-width:100%;height:auto;margin:4px 0 10px}
.cmd{background:#fff4f4;border:1px solid #f1c4c4;padding:4px 8px;border-radius:4px;display:block;
white-space:pre-wrap;word-break:break-all}
pre.hex{line-height:1.35;overflow-x:auto;background:#fcfcfd;border:1px solid var(--line);padding:6px}
.f0{background:#d4f1f4}.f1{background:#d9f2d0}.f2{background:#fdf1c7}.f3{background:#f6d6f2}.f4{background:#d6e2fb}
.f5{background:#c9f0ea}.f6{background:#e4f7c8}.f7{background:#efd9fb}.fu{background:#c62828;color:#fff}.fm{color:#999}
.hexnotes{margin:0;padding-left:18px;font-size:12px}
.sumtable td:first-child{width:40%}
#filter{display:none;margin:0 0 8px;padding:4px 8px;width:100%;max-width:360px;font:inherit}
.js #filter{display:block}
.hidden{display:none}
@media (max-width:600px){main{padding:6px}section,header.verdict{padding:8px 10px}h1{font-size:17px}}
"""

SCRIPT = """
document.documentElement.className='js';
var box=document.getElementById('filter');
if(box){box.addEventListener('input',function(){var q=box.value.toLowerCase();
document.querySelectorAll('[data-find]').forEach(function(el){
el.classList.toggle('hidden',q!==''&&el.getAttribute('data-find').toLowerCase().indexOf(q)<0);});});}
"""


def _csp_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


CSP = (f"default-src 'none'; script-src {_csp_hash(SCRIPT)}; style-src {_csp_hash(STYLE)}; img-src data:; "
       "base-uri 'none'; form-action 'none'")


class _Page:
    """Collects the page's parts; ``w`` appends already-escaped HTML."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def w(self, *html_parts: str) -> None:
        self.parts.extend(html_parts)


def write_report_html(inc: Incident, out: TextIO, run_info: dict[str, Any]) -> str:
    """Write the incident file to ``out``; its verdict (clean, warnings, errors)."""
    from kafkadump.objects.logdir_objects import triage_report

    triage = triage_report(inc.triage) if inc.triage is not None else None
    verdict = _verdict_of(inc, triage)
    page = _Page()
    page.w("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
           f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
           '<meta name="referrer" content="no-referrer">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           f"<title>kafkadump incident report: {verdict}</title>",
           f"<style>{STYLE}</style></head><body><main>")
    _verdict(page, inc, triage, verdict, run_info)
    _nav(page, inc, triage)
    if triage is not None:
        _findings(page, inc, triage)
    _pictures(page, inc, triage)
    if triage is not None:
        _partitions(page, triage)
    _hexdumps(page, inc)
    _custody(page, inc, triage, run_info)
    page.w(f"</main><script>{SCRIPT}</script></body></html>\n")
    out.write("".join(page.parts))
    return verdict


# --- the verdict ------------------------------------------------------------------------------------

def _verdict_of(inc: Incident, triage: dict | None) -> str:
    worst = triage["verdict"] if triage is not None else "clean"
    # a failed request is the traffic's news, not a problem of the bytes (as ``capture`` exits)
    capture_problems = sum(n for c in inc.captures for code, n in c.findings.items() if _problem(code))
    capture_problems += sum(1 for r in inc.replicas if r.summary is not None and r.summary.verdict == "diverged")
    if worst == "clean" and capture_problems:
        worst = "warnings"
    return worst


def _problem(code: str) -> bool:
    try:
        return SEVERITY[Code(code)].value != "info"
    except ValueError:
        return True


def _headline(inc: Incident, triage: dict | None, verdict: str) -> str:
    if triage is None:
        n = sum(c.errors for c in inc.captures)
        return f"{len(inc.captures)} capture{'s' if len(inc.captures) != 1 else ''} read" + (
            f": {n} failed request{'s' if n != 1 else ''}" if n else ": no failed request")
    t = triage["totals"]
    bits = []
    bad = sum(1 for p in triage["partitions"] if p["verdict"] != "clean")
    if bad:
        bits.append(f"{bad} of {t['partitions']} partitions with problems")
    if t["hangingTransactions"]:
        bits.append(f"{t['hangingTransactions']} hanging transaction{'s' if t['hangingTransactions'] != 1 else ''}")
    if t["uncleanElections"]:
        bits.append(f"{t['uncleanElections']} unclean election{'s' if t['uncleanElections'] != 1 else ''}")
    diverged = sum(1 for r in inc.replicas if r.summary is not None and r.summary.verdict == "diverged")
    if diverged:
        bits.append(f"{diverged} cop{'ies' if diverged != 1 else 'y'} of a partition diverged")
    if not bits and verdict != "clean":
        bits.append(f"{t['findings']['error']} errors, {t['findings']['warning']} warnings in "
                    f"{t['files']} files")
    if not bits:
        bits.append(f"{t['partitions']} partitions, {t['files']} files: nothing wrong found")
    return "; ".join(bits)


def _verdict(page: _Page, inc: Incident, triage: dict | None, verdict: str, run_info: dict[str, Any]) -> None:
    page.w(f'<header class="verdict {verdict}" id="verdict">',
           f'<h1><span class="tag">{verdict.upper()}</span>{esc(_headline(inc, triage, verdict))}</h1><ul>')
    for line in _verdict_lines(inc, triage):
        page.w(f"<li>{line}</li>")
    inputs = ", ".join(inc.paths[:5]) + (" \u2026" if len(inc.paths) > 5 else "")
    redacted = " \u00b7 redacted: " + esc(run_info["redacted"]) if run_info.get("redacted") else ""
    page.w("</ul>", f'<div class="meta">{esc(run_info.get("tool", "kafkadump"))} \u00b7 ran '
                    f'{esc(run_info.get("started", ""))} \u00b7 inputs: {esc(inputs)}{redacted}</div></header>')


def _verdict_lines(inc: Incident, triage: dict | None) -> list[str]:
    """What is wrong (the worst codes), where (the worst partitions), how bad (bytes, offsets, lag)."""
    lines = []
    if triage is not None:
        counts = Counter({c: n for c, n in triage["findingCounts"].items() if _problem(c)})
        if counts:
            what = ", ".join(f'<b>{esc(c)}</b> \u00d7{n}' for c, n in
                             sorted(counts.items(), key=lambda x: (_rank(x[0]), -x[1]))[:4])
            top = min(counts, key=lambda c: (_rank(c), -counts[c]))
            lines.append(f"What: {what} \u2014 {esc(_meaning(top))}")
        worst = sorted((p for p in triage["partitions"] if p["verdict"] != "clean"),
                       key=lambda p: (p["verdict"] != "errors", -p["findings"]["error"], -p["findings"]["warning"],
                                      p["path"]))
        if worst:
            names = ", ".join(f'<a href="#p-{_pid(p["path"])}">{esc(_pname(p))}</a>' for p in worst[:4])
            lines.append(f"Where: {names}" + (f" and {len(worst) - 4} more" if len(worst) > 4 else ""))
        t = triage["totals"]
        damaged = sum(p["damagedBytes"] for p in triage["partitions"])
        missing = sum(p["missingOffsets"] for p in triage["partitions"])
        bad = []
        if damaged:
            bad.append(f"{bytes_text(damaged)} damaged of {bytes_text(t['bytes'])}")
        if missing:
            bad.append(f"{_count(missing)} offsets missing")
        if t["hangingTransactions"]:
            stuck = inc.transactions.stuck_partitions() if inc.transactions is not None else []
            bad.append(f"{len(stuck)} partition{'s' if len(stuck) != 1 else ''} stuck at a last stable offset "
                       f'(<a href="#transactions">abort commands</a>)')
        if t["uncleanElections"]:
            bad.append(f'{t["uncleanElections"]} unclean leader election(s): committed data may be lost '
                       f'(<a href="#leaders">history</a>)')
        lag = max((g.lag for g in inc.group_offsets if g.lag is not None), default=None)
        if lag:
            bad.append(f'largest consumer lag {_count(lag)} (<a href="#lag">lag</a>)')
        if bad:
            lines.append("How bad: " + "; ".join(bad))
        lines.append(f"Read: {t['files']} files, {bytes_text(t['bytes'])}, {t['partitions']} partitions, "
                     f"{_count(t['batches'])} batches, {_count(t['records'])} records")
    for c in inc.captures:
        lines.append(f"Capture {esc(os.path.basename(c.path))}: {c.requests} requests on {len(c.connections)} "
                     f"connections, {c.errors} failed" + (' (<a href="#captures">timeline</a>)' if c.exchanges else ""))
    return lines


def _count(n: int) -> str:
    """A count with thin spaces between thousands."""
    return f"{n:,}".replace(",", "\u2009")


_SEV_RANK = {"error": 0, "warning": 1, "info": 2}


def _rank(code: str) -> int:
    try:
        return _SEV_RANK[SEVERITY[Code(code)].value]
    except ValueError:
        return 1


def _meaning(code: str) -> str:
    try:
        return DESCRIPTION.get(Code(code), "")
    except ValueError:
        return ""


def _pname(p: dict) -> str:
    if p.get("topic") is not None:
        return f"{p['topic']}-{p['partition']}"
    return os.path.basename(p["path"])


def _pid(path: str) -> str:
    return hashlib.sha256(path.encode("utf-8", "surrogateescape")).hexdigest()[:12]


def _nav(page: _Page, inc: Incident, triage: dict | None) -> None:
    links = []
    if triage is not None:
        links += [("findings", "Findings"), ("timelines", "Timelines")]
    if inc.maps:
        links.append(("bytemaps", "Damaged bytes"))
    if inc.replicas:
        links.append(("replicas", "Copies compared"))
    if inc.transactions is not None and inc.transactions.transactions:
        links.append(("transactions", "Transactions"))
    if inc.histories:
        links.append(("leaders", "Leaders and ISR"))
    if any(g.lag is not None for g in inc.group_offsets):
        links.append(("lag", "Consumer lag"))
    if inc.captures:
        links.append(("captures", "Captures"))
    if triage is not None:
        links.append(("partitions", "Partitions"))
    if inc.hexdumps:
        links.append(("hexdumps", "Hexdumps"))
    links.append(("custody", "Chain of custody"))
    page.w("<nav>" + "".join(f'<a href="#{a}">{t}</a>' for a, t in links) + "</nav>")


# --- findings ---------------------------------------------------------------------------------------

def _findings(page: _Page, inc: Incident, triage: dict) -> None:
    page.w('<section id="findings"><h2>Findings by partition and code</h2>',
           '<input id="filter" type="search" placeholder="filter findings (code, file, text)" '
           'aria-label="filter findings">')
    owner = _file_owner(triage)
    segments = {f["file"]: f for f in triage["files"] if f["kind"] == "segment"}
    groups: dict[tuple[str, str], list[dict]] = {}
    counts: Counter = Counter()
    for f in triage["files"]:
        for code, n in f["findingCounts"].items():
            counts[(owner.get(f["file"], LOOSE), code)] += n
    for x in triage["findings"]:
        groups.setdefault((owner.get(x["file"], LOOSE), x["code"]), []).append(x)
    order = sorted(counts, key=lambda k: (k[0] == LOOSE, _rank(k[1]), k[0], k[1]))
    if not order:
        page.w('<p>No findings.</p></section>')
        return
    anchors = _hexdump_places(inc)
    page.w('<div class="scroll"><table><thead><tr><th>partition</th><th>code</th><th class="n">count</th>'
           '<th>file</th><th class="n">byte</th><th>offsets</th><th>message</th><th>hexdump</th></tr></thead><tbody>')
    shown = 0
    for key in order[:MAX_FINDING_GROUPS]:
        where, code = key
        items = sorted(groups.get(key, []), key=lambda x: (x["file"], x["offset"]))
        sev = SEVERITY[Code(code)].value if code in Code._value2member_map_ else "warning"
        first = True
        listed: list[dict | None] = list(items[:FINDINGS_PER_GROUP]) or [None]
        for x in listed:
            shown += 1
            row = [f'<td class="c">{esc(where) if first else ""}</td>',
                   f'<td class="c sev-{sev}" title="{esc(_meaning(code))}">{esc(code) if first else ""}</td>',
                   f'<td class="n">{counts[key] if first else ""}</td>']
            if x is None:
                row.append('<td colspan="5" class="note">listed in the files\' findings (triage --json)</td>')
            else:
                link = anchors.get((x["file"], x["offset"])) or _containing(anchors, x["file"], x["offset"])
                hexlink = f'<a href="#{link[0]}">hexdump</a>' if link else ""
                shown_name = os.path.basename(x["file"]) if where != LOOSE else _rel(x["file"], triage)
                row += [f'<td class="mono path file" title="{esc(x["file"])}">{esc(shown_name)}</td>',
                        f'<td class="n">{x["offset"]}</td>',
                        f'<td class="c">{_offsets_of(x, segments, link)}</td>',
                        f"<td class=\"msg\">{esc(x['message'])}</td>",
                        f"<td>{hexlink}</td>"]
            text = f"{where} {code} {x['file'] if x else ''} {x['message'] if x else ''}"
            page.w(f'<tr data-find="{esc(text)}">' + "".join(row) + "</tr>")
            first = False
        if len(items) > FINDINGS_PER_GROUP or counts[key] > max(len(items), 1):
            more = counts[key] - min(len(items), FINDINGS_PER_GROUP)
            page.w(f'<tr data-find="{esc(where)} {esc(code)}"><td></td><td></td><td></td>'
                   f'<td colspan="5" class="note">and {more} more {esc(code)} here</td></tr>')
    page.w("</tbody></table></div>")
    if len(order) > MAX_FINDING_GROUPS:
        rest = sum(counts[k] for k in order[MAX_FINDING_GROUPS:])
        page.w(f'<p class="note">{len(order) - MAX_FINDING_GROUPS} more partition and code groups ({rest} findings) '
               "not listed: kafkadump triage --json lists every one.</p>")
    page.w("</section>")


def _file_owner(triage: dict) -> dict[str, str]:
    """File path -> the name of the partition holding it."""
    by_dir = {os.path.normpath(p["path"]): _pname(p) for p in triage["partitions"]}
    return {f["file"]: by_dir[d] for f in triage["files"]
            if (d := os.path.normpath(os.path.dirname(f["file"]))) in by_dir}


def _rel(path: str, triage: dict) -> str:
    base = triage.get("path") or ""
    if base and os.path.isdir(base) and path.startswith(base.rstrip("/") + "/"):
        return path[len(base.rstrip("/")) + 1:]
    return path


def _hexdump_places(inc: Incident) -> dict[tuple[str, int], tuple[str, Any, int]]:
    """(file, item position) -> (anchor, decoded item, item size) of every embedded hexdump."""
    return {(h.view.path, h.view.start): (h.anchor, h.view.decoded, h.view.decoded.size) for h in inc.hexdumps}


def _containing(anchors: dict, file: str, offset: int) -> tuple[str, Any, int] | None:
    for (path, start), v in anchors.items():
        if path == file and start <= offset < start + max(v[2], 1):
            return v
    return None


def _offsets_of(x: dict, segments: dict[str, dict], link: tuple[str, Any, int] | None) -> str:
    """The Kafka offsets of a finding: its batch's when its hexdump is embedded, else its segment's range."""
    item = link[1] if link else None
    base = getattr(item, "base_offset", None)
    if base is not None:
        last = getattr(item, "last_offset", None)
        return f"batch {base}\u2013{last}" if last is not None and last != base else f"batch {base}"
    seg = segments.get(x["file"])
    if seg and seg.get("firstOffset") is not None:
        return f'<span class="note">segment {seg["firstOffset"]}\u2013{seg["lastOffset"]}</span>'
    return ""


# --- pictures ---------------------------------------------------------------------------------------

def _pictures(page: _Page, inc: Incident, triage: dict | None) -> None:
    if triage is not None:
        page.w('<section id="timelines"><h2>Offsets against time</h2>',
               '<p class="note">Each bar is a batch (its offsets, at its newest timestamp); red bars are damaged; '
               'shaded bands are offsets missing between batches; dashed lines are segment starts.</p>')
        for t in inc.timelines:
            name = f"{t.topic}-{t.partition}" if t.topic is not None else os.path.basename(t.path)
            page.w(f'<h3 id="t-{_pid(t.path)}">{esc(name)} <span class="note path">{esc(t.path)}</span></h3>',
                   timeline_svg(t))
        if not inc.timelines:
            page.w("<p>No partition with batches among the inputs.</p>")
        page.w("</section>")
    if inc.maps:
        page.w('<section id="bytemaps"><h2>Damaged segments, byte by byte</h2>',
               '<p class="note">Green: intact batches; red: damaged bytes; blue: intact batches found after the '
               'damage (resynced); grey: zero padding.</p>')
        for m in inc.maps:
            page.w(f'<h3 class="path mono">{esc(m.path)} ({bytes_text(m.size)})</h3>', byte_map_svg(m))
            damaged = [p for p in m.pieces if p.kind == "damaged"][:10]
            if damaged:
                page.w('<p class="note">damaged: ' + ", ".join(f"bytes {p.start}\u2013{p.start + p.size - 1}"
                                                             for p in damaged) + "</p>")
        page.w("</section>")
    _replicas(page, inc)
    _transactions(page, inc)
    _leaders(page, inc)
    _lag(page, inc)
    _captures(page, inc)
    if inc.summarised or inc.not_read:
        page.w('<section id="summarised"><h2>What was summarised or not read</h2><ul>')
        for s in inc.summarised:
            page.w(f"<li>{esc(s)}</li>")
        for s in inc.not_read[:200]:
            page.w(f'<li class="path">not read: {esc(s)}</li>')
        if len(inc.not_read) > 200:
            page.w(f"<li>and {len(inc.not_read) - 200} more files not read (triage --json lists them)</li>")
        page.w("</ul></section>")


def _replicas(page: _Page, inc: Incident) -> None:
    if not inc.replicas:
        return
    page.w('<section id="replicas"><h2>Copies of a partition compared</h2>',
           '<p class="note">Each copy against the first of the same topic id, by offset, as '
           '<code>kafkadump diff</code> compares them.</p><div class="scroll"><table><thead><tr><th>partition</th>'
           '<th>copy A</th><th>copy B</th><th>verdict</th><th class="n">identical through</th>'
           '<th class="n">only in A</th><th class="n">only in B</th><th class="n">different</th></tr></thead><tbody>')
    for r in inc.replicas:
        s = r.summary
        if s is None:
            continue
        bad = s.verdict == "diverged"
        page.w(f"<tr><td>{esc(r.topic)}-{esc(r.partition)}</td><td class='mono path'>{esc(r.path_a)}</td>"
               f"<td class='mono path'>{esc(r.path_b)}</td><td class='{'sev-error' if bad else ''}'>{esc(s.verdict)}</td>"
               f"<td class='n'>{esc(_dash(s.identical_through))}</td><td class='n'>{s.only_in_a}</td>"
               f"<td class='n'>{s.only_in_b}</td><td class='n'>{s.different}</td></tr>")
        for d in r.divergences:
            page.w(f"<tr><td></td><td colspan='7' class='note'>{esc(d.kind)} offsets {d.from_offset}\u2013"
                   f"{d.to_offset} (leader epochs {esc(_dash(d.leader_epoch_a))} / {esc(_dash(d.leader_epoch_b))})"
                   f"{': ' + esc(', '.join(d.fields)) if d.fields else ''}</td></tr>")
    page.w("</tbody></table></div></section>")


def _transactions(page: _Page, inc: Incident) -> None:
    report = inc.transactions
    if report is None or not report.transactions:
        return
    counts = Counter(t.state for t in report.transactions)
    page.w('<section id="transactions"><h2>Transactions</h2>',
           f'<p>{", ".join(f"{n} {s}" for s, n in sorted(counts.items()))}'
           f'{f"; {report.not_listed} more not listed" if report.not_listed else ""}. '
           'One row per transaction, a bar per partition from its first data to its marker.</p>',
           transactions_svg(report.transactions))
    stuck = report.stuck_partitions()
    if stuck:
        from kafkadump.reports.transactions import abort_command

        page.w("<h3>Hanging: the commands that end them</h3><ul>")
        for p in stuck[:100]:
            cmd = abort_command(p.topic, p.partition, p.span.first_offset)
            page.w(f"<li>{esc(p.topic)}-{esc(p.partition)}: stuck at last stable offset "
                   f"{esc(p.last_stable_offset)} (log end {esc(p.log_end_offset)}); {esc(p.reason or '')}"
                   f'<code class="cmd">{esc(cmd)}</code></li>')
        page.w("</ul>")
    page.w("</section>")


def _leaders(page: _Page, inc: Incident) -> None:
    if not inc.histories:
        return
    page.w('<section id="leaders"><h2>Leaders and ISR, from the metadata log</h2>',
           '<p class="note">A lane per broker: thick bar = leader, thin bar = in the ISR; red = leader by an unclean '
           'election.</p>')
    for h in inc.histories:
        title = f"{h.topic}-{h.partition}" + (f": {h.unclean} unclean election(s)" if h.unclean else "")
        page.w(f'<h3 class="{"sev-error" if h.unclean else ""}">{esc(title)}</h3>', leaders_svg(h))
        for c in [c for c in h.changes if c.unclean][:5]:
            page.w(f'<p class="sev-error">unclean election at metadata offset {c.offset}: leader {c.leader}'
                   f'{", " + esc(c.reason) if c.reason else ""}</p>')
        if h.dropped:
            page.w(f'<p class="note">{h.dropped} later changes not drawn.</p>')
    page.w("</section>")


def _lag(page: _Page, inc: Incident) -> None:
    svg = lag_svg(inc.group_offsets)
    if not svg:
        return
    page.w('<section id="lag"><h2>Consumer lag at the time of the copy</h2>',
           '<p class="note">Log end offset minus the group\'s committed offset, per group and partition.</p>', svg,
           "</section>")


def _captures(page: _Page, inc: Incident) -> None:
    if not inc.captures:
        return
    page.w('<section id="captures"><h2>Captures: requests over time per connection</h2>')
    for c in inc.captures:
        page.w(f'<h3 class="path mono">{esc(c.path)}</h3>',
               f"<p>{c.requests} requests, {c.errors} failed, clients: "
               f"{esc(', '.join(sorted(c.clients)[:10]) or '-')}"
               f'{"; requests thinned for the picture, failed ones all drawn" if c.thinned else ""}</p>',
               capture_svg(c) or '<p class="note">no request with a capture time.</p>')
        if c.findings:
            page.w('<p class="note">findings: ' + ", ".join(f"{esc(k)} \u00d7{n}" for k, n in
                                                           sorted(c.findings.items())) + "</p>")
    page.w("</section>")


# --- partitions -------------------------------------------------------------------------------------

def _partitions(page: _Page, triage: dict) -> None:
    parts = sorted(triage["partitions"], key=lambda p: (p["verdict"] == "clean", p["verdict"] != "errors", p["path"]))
    page.w('<section id="partitions"><h2>Partitions</h2><div class="scroll"><table><thead><tr><th>partition</th>'
           '<th>verdict</th><th class="n">log start</th><th class="n">log end</th><th class="n">batches</th>'
           '<th class="n">missing</th><th class="n">damaged bytes</th><th>findings</th></tr></thead><tbody>')
    for p in parts[:MAX_PARTITION_ROWS]:
        codes = ", ".join(f"{esc(c)} \u00d7{n}" for c, n in p["findingCounts"].items())
        page.w(f'<tr id="p-{_pid(p["path"])}" data-find="{esc(_pname(p))}"><td title="{esc(p["path"])}">'
               f'{esc(_pname(p))}</td><td class="sev-{_sev_class(p["verdict"])}">{esc(p["verdict"])}</td>'
               f'<td class="n">{esc(_dash(p["firstOffset"]))}</td><td class="n">{esc(_dash(p["logEndOffset"]))}</td>'
               f'<td class="n">{p["batches"]}</td><td class="n">{p["missingOffsets"]}</td>'
               f'<td class="n">{p["damagedBytes"]}</td><td>{codes}</td></tr>')
    page.w("</tbody></table></div>")
    if len(parts) > MAX_PARTITION_ROWS:
        page.w(f'<p class="note">{len(parts) - MAX_PARTITION_ROWS} more clean partitions not listed '
               "(triage --json lists every one).</p>")
    page.w("</section>")


def _sev_class(verdict: str) -> str:
    return {"errors": "error", "warnings": "warning"}.get(verdict, "info")


def _dash(v: object) -> str:
    return "-" if v is None else str(v)


# --- hexdumps ---------------------------------------------------------------------------------------

def _hexdumps(page: _Page, inc: Incident) -> None:
    if not inc.hexdumps:
        return
    page.w('<section id="hexdumps"><h2>Annotated hexdumps of damaged items</h2>',
           '<p class="note">The same fields as <code>kafkadump hexdump</code>: each field\'s bytes share a colour; '
           'red bytes are explained by no field.</p>')
    for h in inc.hexdumps:
        _hexdump(page, h)
    if inc.hexdumps_left_out:
        page.w(f'<p class="note">{inc.hexdumps_left_out} more damaged items not embedded.</p>')
    page.w("</section>")


def _hexdump(page: _Page, h: Hexdump) -> None:
    from kafkadump.decoders.batches.model import Batch
    from kafkadump.render.hexdump import Pane, describe_span, leaf_spans

    view = h.view
    item = view.decoded
    size = len(view.raw)
    shown = min(size, MAX_HEX_BYTES)
    data = bytes(view.raw[0:shown])
    leaves = leaf_spans(view.spans, expand_records=False)
    pane = Pane("file", data, view.start, leaves, "file", view.masked)
    owner = [-1] * shown
    for i, s in enumerate(pane.spans):
        for b in range(max(s.offset - view.start, 0), min(s.offset - view.start + s.length, shown)):
            owner[b] = i
    page.w(f'<h3 id="{h.anchor}" class="mono path">{esc(view.path)} @ byte {view.start} \u2014 {esc(h.code)}'
           f' ({size} bytes{f", first {shown} shown" if shown < size else ""})</h3>')
    rows = []
    for r in range(0, shown, 16):
        cells = []
        for b in range(r, min(r + 16, shown)):
            own = owner[b]
            hidden = pane.hidden(view.start + b)
            cls = "fm" if hidden else ("fu" if own < 0 or pane.spans[own].raw == "unparsed" else f"f{own % 8}")
            cells.append(f'<span class="{cls}">{"**" if hidden else format(data[b], "02x")}</span>')
        text = "".join("*" if pane.hidden(view.start + b) else
                       (chr(data[b]) if 32 <= data[b] < 127 else ".") for b in range(r, min(r + 16, shown)))
        notes = [describe_span(s, item if isinstance(item, Batch) else None) for s in pane.spans
                 if r <= s.offset - view.start < r + 16]
        note = f'  <span class="fm">{esc("; ".join(notes))}</span>' if notes else ""
        rows.append(f"{view.start + r:08x}  {' '.join(cells)}{'   ' * (16 - len(cells))}  {esc(text)}{note}")
    page.w('<pre class="hex">' + "\n".join(rows) + "</pre>")
    if item.findings:
        page.w('<ul class="hexnotes">' + "".join(
            f'<li class="sev-{f.severity.value}">{esc(f.code.value)} @{f.offset}: {esc(f.message)}</li>'
            for f in item.findings[:20]) + "</ul>")


# --- chain of custody -------------------------------------------------------------------------------

def _custody(page: _Page, inc: Incident, triage: dict | None, run_info: dict[str, Any]) -> None:
    page.w('<section id="custody"><h2>Chain of custody</h2><table class="sumtable"><tbody>')
    for k, v in (("tool", run_info.get("tool")), ("tool path", run_info.get("tool_path")),
                 ("hot path", run_info.get("active_path")), ("command line", run_info.get("command")),
                 ("ran at", run_info.get("started")), ("inputs", ", ".join(inc.paths)),
                 ("redaction", run_info.get("redacted") or "none")):
        page.w(f"<tr><td>{esc(k)}</td><td class='mono path'>{esc(v)}</td></tr>")
    files = _custody_rows(inc, triage)
    total = sum(f.get("size") or 0 for f in files)
    manifest = "".join(f"{f.get('sha256') or '-'}  {f['file']}\n" for f in sorted(files, key=lambda f: f["file"]))
    digest = hashlib.sha256(manifest.encode("utf-8", "surrogateescape")).hexdigest()
    page.w(f"<tr><td>files read</td><td>{len(files)} files, {bytes_text(total)}</td></tr>",
           f"<tr><td>manifest SHA-256</td><td class='mono path'>{digest} <span class='note'>(of the sha256sum "
           "lines below, sorted by path)</span></td></tr></tbody></table>")
    page.w('<h3>Files</h3><div class="scroll"><table><thead><tr><th>file</th><th class="n">size</th><th>mtime (UTC)</th>'
           '<th>SHA-256</th></tr></thead><tbody>')
    for f in files[:MAX_CUSTODY_ROWS]:
        page.w(f'<tr><td class="mono path">{esc(f["file"])}</td><td class="n">{esc(_dash(f.get("size")))}</td>'
               f'<td class="mono">{esc(_dash(f.get("mtime")))}</td><td class="mono path">{esc(_dash(f.get("sha256")))}'
               f'{"<br>" + esc(f["error"]) if f.get("error") else ""}</td></tr>')
    page.w("</tbody></table></div>")
    if len(files) > MAX_CUSTODY_ROWS:
        lines = manifest.splitlines()
        page.w(f'<details><summary>all {len(files)} files as sha256sum lines'
               f'{f" (the first {MAX_MANIFEST_LINES})" if len(lines) > MAX_MANIFEST_LINES else ""}</summary>'
               '<pre class="mono">' + esc("\n".join(lines[:MAX_MANIFEST_LINES])) + "</pre></details>")
    page.w("</section>")


def _custody_rows(inc: Incident, triage: dict | None) -> list[dict]:
    rows = [{"file": s.path, "size": s.size, "mtime": s.mtime, "sha256": s.sha256} for s in inc.capture_custody]
    if triage is not None:
        rows += [{k: f.get(k) for k in ("file", "size", "mtime", "sha256", "error")} for f in triage["files"]]
    return rows


def summary_line(inc: Incident, verdict: str, path: str, size: int) -> str:
    """The one line on stderr after the file is written."""
    parts: Iterable[str] = [f"{path}: {verdict}", f"{bytes_text(size)}"]
    if inc.triage is not None:
        parts = [*parts, f"{len(inc.triage.partitions)} partitions", f"{len(inc.timelines)} timelines"]
    if inc.captures:
        parts = [*parts, f"{len(inc.captures)} captures"]
    return "report written: " + ", ".join(parts)


__all__ = ["write_report_html", "summary_line", "CSP"]
