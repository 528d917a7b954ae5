#!/usr/bin/env python3
"""Reads the live page as headless Chromium rendered it (--dump-dom) back
against /result.json (tests/live.sh).

  live_page.py points DOM BEFORE.json AFTER.json
      Every figure of the page's points table (each cell's data-field and
      data-value) equals /result.json's, fetched just before or just after
      the page was loaded (a repeat may finish while it loads); at least one
      point shows a finished repeat, and the stall headline is a share
      (0 to 100 %). Prints what the page showed, one line, for the caller
      to compare between two loads.
  live_page.py watch URL OUT.json
      Polls URL's /live.json and /metrics twice a second until the server
      is gone; writes what it saw while the run was measuring (the live
      stall of each, and pbench_live_stall_ratio) and the last /live.json.
  live_page.py stall OUT.json RESULT.json
      The live stall was there mid-run and a share (0 to 1 in /metrics, 0
      to 100 % in /live.json); each repeat's windows (the series' stall
      of that point and repeat) agree with the repeat's final stall within
      their noise: the windows' mean is within twice their standard error,
      plus 3 points or a quarter of the stall, of it.
  live_page.py ranks DOM RESULT.json
      The ranks table has a line per rank of each point with ranks, the
      slowest one (multi_rank.slowest_rank) marked, and its figures those of
      the result.
"""
import html.parser
import json
import math
import re
import statistics
import sys
import time
import urllib.request


class Page(html.parser.HTMLParser):
    """The rows of the tables with ids points and ranks, and the text of
    the elements with ids (elapsed, state, ...)."""

    def __init__(self):
        super().__init__()
        self.table = None
        self.rows = {"points": [], "ranks": []}
        self.row = None
        self.cell = None
        self.ids = {}
        self.values = {}
        self.text_of = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table" and a.get("id") in self.rows:
            self.table = a["id"]
        elif tag == "tr" and self.table and ("data-point" in a):
            self.row = {"attrs": a, "fields": {}, "text": []}
            self.rows[self.table].append(self.row)
        elif tag == "td" and self.row is not None:
            self.cell = a
            self.row["text"].append("")
        if "id" in a and tag in ("b", "span", "div"):
            self.text_of = a["id"]
            self.ids[self.text_of] = ""
            if "data-value" in a:
                self.values[a["id"]] = a["data-value"]

    def handle_endtag(self, tag):
        if tag == "table":
            self.table = None
        elif tag == "tr":
            self.row = None
        elif tag == "td" and self.cell is not None:
            if "data-field" in self.cell:
                self.row["fields"][self.cell["data-field"]] = self.cell.get("data-value", "")
            self.cell = None
        if tag in ("b", "span", "div"):
            self.text_of = None

    def handle_data(self, data):
        if self.cell is not None and self.row is not None:
            self.row["text"][-1] += data
        if self.text_of:
            self.ids[self.text_of] += data


def read_page(path):
    page = Page()
    with open(path, encoding="utf-8") as f:
        page.feed(f.read())
    return page


def machine_ref(point):
    refs = [r.get("ref_cpu_ns") for r in point.get("repeats", [])]
    refs = [v for v in refs if isinstance(v, (int, float)) and v > 0]
    return statistics.median(refs) if refs else None


def expected(point):
    """What the page shows of a point of /result.json, field by field."""
    repeats = len(point.get("repeats", []))
    want = {"repeats": repeats, "machine_ref_ns": machine_ref(point)}
    for key in ("samples_per_s", "stall_pct", "worker_cpu_pct", "other_cpu_pct", "steal_pct"):
        want[key] = point.get(key) if repeats else None
    return want


def same(shown, value):
    if value is None:
        return shown == ""
    if shown == "":
        return False
    return abs(float(shown) - value) <= 1e-9 * max(1.0, abs(value))


def mismatches(row, point):
    return [f"{k}: page {row['fields'].get(k)!r}, result {v!r}"
            for k, v in expected(point).items() if not same(row["fields"].get(k, ""), v)]


def check_points(dom, before, after):
    page = read_page(dom)
    results = [json.load(open(p)) for p in (before, after)]
    rows = page.rows["points"]
    assert rows, "the page shows no point (state %r)" % page.ids.get("state")
    for row in rows:
        i = int(row["attrs"]["data-point"]) - 1
        why = []
        for r in results:
            points = r.get("points", [])
            if i >= len(points):
                why.append(["the result has no point %d" % (i + 1)])
                continue
            why.append(mismatches(row, points[i]))
            if not why[-1]:
                break
        else:
            raise AssertionError("point %d differs from /result.json: %s" % (i + 1, why))
    assert any(int(row["fields"]["repeats"]) > 0 for row in rows), "no finished repeat shown"
    stall = page.values.get("stall", "")
    assert stall != "" and 0 <= float(stall) <= 100, "the stall headline is %r" % stall
    shown = {"elapsed": page.ids.get("elapsed"), "state": page.ids.get("state"),
             "points": [row["fields"] for row in rows]}
    print(json.dumps(shown, sort_keys=True))


def check_ranks(dom, result):
    page = read_page(dom)
    r = json.load(open(result))
    rows = page.rows["ranks"]
    want = 0
    for i, p in enumerate(r["points"]):
        ranks = p.get("ranks") or []
        if len(ranks) < 2:
            continue
        slowest = p["multi_rank"]["slowest_rank"]
        mine = [row for row in rows if row["attrs"]["data-point"] == str(i + 1)]
        assert len(mine) == len(ranks), "point %d: %d rank lines for %d ranks" % (
            i + 1, len(mine), len(ranks))
        for row, rank in zip(mine, ranks):
            assert row["attrs"]["data-rank"] == str(rank["rank"]), row["attrs"]
            marked = "slowest" in row["attrs"].get("class", "")
            assert marked == (rank["rank"] == slowest), "rank %s marked %s, slowest is %s" % (
                rank["rank"], marked, slowest)
            assert marked == ("slowest" in row["text"][-1]), row["text"]
            for key in ("samples_per_s", "stall_pct", "worker_cpu_pct"):
                assert same(row["fields"].get(key, ""), rank[key]), (key, row["fields"], rank)
        want += len(ranks)
    assert want and len(rows) == want, "%d rank lines, %d ranks" % (len(rows), want)
    print("ranks: %d lines, the slowest marked" % len(rows))


def fetch(url):
    with urllib.request.urlopen(url, timeout=2) as res:
        return res.read().decode("utf-8")


def watch(url, out):
    seen, last = [], None
    while True:
        try:
            live = json.loads(fetch(url + "/live.json"))
            metrics = fetch(url + "/metrics")
        except OSError:
            break
        last = live
        ratio = re.search(r"^pbench_live_stall_ratio\{.*\} (\S+)$", metrics, re.M)
        if live.get("state") == "measuring" and live.get("point"):
            seen.append({"stall_pct": live.get("stall_pct"),
                         "ratio": float(ratio.group(1)) if ratio else None})
        time.sleep(0.5)
    json.dump({"seen": seen, "last": last}, open(out, "w"))


def check_stall(watched, result):
    w = json.load(open(watched))
    r = json.load(open(result))
    seen = [x for x in w["seen"] if x["ratio"] is not None]
    assert seen, "no pbench_live_stall_ratio while the run was measuring (%d polls)" % len(w["seen"])
    for x in seen:
        assert 0 <= x["ratio"] <= 1, "pbench_live_stall_ratio %s" % x["ratio"]
        assert x["stall_pct"] is not None and 0 <= x["stall_pct"] <= 100, x
    s = w["last"]["series"]
    checked = 0
    for i, p in enumerate(r["points"]):
        for k, rep in enumerate(p["repeats"]):
            windows = [v for v, pt, rp in zip(s["stall_pct"], s["point"], s["repeat"])
                       if pt == i + 1 and rp == k + 1 and v is not None]
            assert all(0 <= v <= 100 for v in windows), windows
            if len(windows) < 3:
                continue
            mean = statistics.mean(windows)
            error = statistics.stdev(windows) / math.sqrt(len(windows))
            final = rep["stall_pct"]
            print("point %d repeat %d: final stall %.1f %%, %d windows %.1f %% +- %.1f" % (
                i + 1, k + 1, final, len(windows), mean, error))
            # The windows leave out the repeat's tail after the last one
            # closes, and a busy machine moves single windows: a slack of
            # 3 points or a quarter of the stall, beside their noise.
            assert abs(mean - final) <= 2 * error + max(3.0, 0.25 * final), (
                "point %d repeat %d: windows %s, final %.2f %%" % (i + 1, k + 1, windows, final))
            checked += 1
    assert checked, "no repeat with 3 windows or more: %s" % s
    print("live stall: %d polls mid-run, each a share; %d repeats' windows agree with their "
          "final stall" % (len(seen), checked))


if __name__ == "__main__":
    if sys.argv[1] == "points":
        check_points(*sys.argv[2:5])
    elif sys.argv[1] == "ranks":
        check_ranks(*sys.argv[2:4])
    elif sys.argv[1] == "watch":
        watch(*sys.argv[2:4])
    elif sys.argv[1] == "stall":
        check_stall(*sys.argv[2:4])
    else:
        sys.exit("usage: live_page.py points DOM BEFORE AFTER | ranks DOM RESULT | "
                 "watch URL OUT | stall OUT RESULT")
