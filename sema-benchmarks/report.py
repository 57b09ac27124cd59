#!/usr/bin/env python3
"""Turns a JMH JSON result file (and the WaiterFootprint output) into docs/BENCHMARKS.md.

Standard library only. bin/benchmarks runs it; by hand:

    python3 sema-benchmarks/report.py --results jmh-result.json --footprint footprint.md \
        --mode quick --jmh-args "-f 1 ..." > docs/BENCHMARKS.md

Every table compares the implementations measured in the same run. Ratio columns are "time ratios":
the implementation's time per operation divided by the anchor's (for throughput scores, the anchor's
throughput divided by the implementation's), so below 1.00 means faster than the anchor.
"""

import argparse
import json
import math
import sys
from collections import OrderedDict

LABELS = OrderedDict([
    ("SEMA_FIFO", "Sema FIFO"),
    ("SEMA_BARGING", "Sema BARGING"),
    ("JDK_NONFAIR", "JDK non-fair"),
    ("JDK_FAIR", "JDK fair"),
    ("ASYNCUTIL_FAIR", "asyncutil FairAsyncSemaphore"),
    ("HAND_WRITTEN", "hand-written lock + deque"),
])
ANCHORS = ["JDK_NONFAIR", "JDK_FAIR", "ASYNCUTIL_FAIR", "HAND_WRITTEN"]

SECTIONS = [
    ("UncontendedBenchmark", "1. Uncontended acquire + release, one thread",
     "One thread acquires 1 permit and releases it (Sema with try-with-resources). B/op is JMH's "
     "`gc.alloc.rate.norm` (`-prof gc`)."),
    ("ContendedBenchmark", "2. Contended: 2 and 4 threads, limit 1 and 2",
     "Platform threads share one semaphore; each operation holds 1 permit for a tiny CPU-bound section "
     "(`inside` tokens of `Blackhole.consumeCPU`), then burns `outside` tokens. Throughput of all threads."),
    ("VirtualThreadBatchBenchmark", "3. 10,000 virtual threads through a limit of 64",
     "One operation is a batch: start 10,000 virtual threads that each hold 1 of 64 permits around a "
     "short section that yields its carrier once, and join them all."),
    ("AsyncThroughputBenchmark", "4. Async: 1,000 requests in flight on a limit of 16",
     "A single-threaded event loop keeps 1,000 async requests outstanding; one operation is one grant "
     "(release a granted request, which grants the head of the queue, and issue the next). The JDK "
     "semaphore has no async acquire and is not in this table."),
    ("ReleaseCostBenchmark", "5. Release cost against the number of queued async waiters",
     "One permit, held, with `queued` async waiters behind it; one operation releases it to the head "
     "waiter and queues a new waiter at the tail (the queue length stays constant)."),
    ("WeightedBenchmark", "6. Weighted requests of 1..8 permits on a limit of 16, 4 threads",
     "Each operation acquires a pseudo-random 1..8 permits (the same sequence for every implementation), "
     "runs a tiny section and releases. The async-only implementations block by joining their future."),
]


def number(x):
    if isinstance(x, str):
        try:
            return float(x)
        except ValueError:
            return float("nan")
    return float(x) if x is not None else float("nan")


def fmt(x, ref=None):
    """About three significant digits of ref (default x), the same decimals for score and error."""
    if x is None or math.isnan(x):
        return "n/a"
    r = abs(ref if ref is not None and not math.isnan(ref) else x)
    if r == 0:
        decimals = 3
    else:
        decimals = max(0, 2 - int(math.floor(math.log10(r))))
    return f"{x:,.{decimals}f}"


def class_and_method(name):
    parts = name.split(".")
    return parts[-2], parts[-1]


def is_throughput(mode):
    return mode == "thrpt"


def time_ratio(row, anchor):
    """Row's time per op over the anchor's (lower is better)."""
    a, b = row["score"], anchor["score"]
    if not a or not b or math.isnan(a) or math.isnan(b):
        return float("nan")
    return b / a if is_throughput(row["mode"]) else a / b


def load(path):
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    rows = []
    for r in data:
        cls, method = class_and_method(r["benchmark"])
        params = dict(r.get("params") or {})
        impl = params.pop("impl", "?")
        pm = r["primaryMetric"]
        alloc = float("nan")
        for key, metric in (r.get("secondaryMetrics") or {}).items():
            if key.lstrip("\u00b7") == "gc.alloc.rate.norm":
                alloc = number(metric.get("score"))
        rows.append({
            "cls": cls, "method": method, "impl": impl, "params": params,
            "mode": r.get("mode"), "threads": r.get("threads"),
            "score": number(pm.get("score")), "error": number(pm.get("scoreError")),
            "unit": pm.get("scoreUnit", ""), "alloc": alloc, "raw": r,
        })
    return data, rows


def group_key(row):
    return (row["cls"], row["method"], tuple(sorted(row["params"].items())))


def param_text(params):
    return ", ".join(f"{k}={v}" for k, v in sorted(params.items()))


def impl_order(impl):
    keys = list(LABELS)
    return keys.index(impl) if impl in keys else len(keys)


def table(rows):
    rows = sorted(rows, key=lambda r: impl_order(r["impl"]))
    by_impl = {r["impl"]: r for r in rows}
    anchors = [a for a in ANCHORS if a in by_impl]
    show_alloc = any(not math.isnan(r["alloc"]) for r in rows)
    head = ["implementation", "score", "error (99.9%)", "unit"]
    if show_alloc:
        head.append("B/op")
    head += [f"time ÷ {LABELS[a]}" for a in anchors]
    out = ["| " + " | ".join(head) + " |",
           "|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|"]
    for r in rows:
        cells = [LABELS.get(r["impl"], r["impl"]), fmt(r["score"]), fmt(r["error"], r["score"]), r["unit"]]
        if show_alloc:
            cells.append(fmt(r["alloc"]) if not math.isnan(r["alloc"]) else "n/a")
        for a in anchors:
            cells.append(f"{time_ratio(r, by_impl[a]):.2f}" if r["impl"] != a else "1.00")
        out.append("| " + " | ".join(cells) + " |")
    return out


def flatness(rows):
    """ReleaseCostBenchmark: one row per implementation, one column per queue length."""
    sizes = sorted({int(r["params"].get("queued", 0)) for r in rows})
    if len(sizes) < 2:
        return [], {}
    impls = sorted({r["impl"] for r in rows}, key=impl_order)
    out = ["| implementation | " + " | ".join(f"queued={s:,}" for s in sizes) + " | largest ÷ smallest |",
           "|---|" + "---:|" * (len(sizes) + 1)]
    spread = {}
    for impl in impls:
        scores = {int(r["params"]["queued"]): r for r in rows if r["impl"] == impl}
        values = [scores[s]["score"] for s in sizes if s in scores]
        unit = next(iter(scores.values()))["unit"]
        ok = [v for v in values if not math.isnan(v) and v > 0]
        ratio = max(ok) / min(ok) if len(ok) >= 2 else float("nan")
        spread[impl] = ratio
        cells = [f"{fmt(scores[s]['score'])} {unit}" if s in scores else "n/a" for s in sizes]
        out.append(f"| {LABELS.get(impl, impl)} | " + " | ".join(cells) + f" | {ratio:.2f} |")
    return out, spread


def targets(rows):
    """The issue's targets, each checked on the scores (not on their error bars)."""
    groups = OrderedDict()
    for r in rows:
        groups.setdefault(group_key(r), {})[r["impl"]] = r
    out = []

    def check(label, where, impl, anchor, limit, g):
        if impl not in g or anchor not in g:
            out.append((label, where, "not run", ""))
            return
        ratio = time_ratio(g[impl], g[anchor])
        met = "yes" if ratio <= limit + 1e-9 else "no"
        out.append((label, where, f"{LABELS[impl]} time ÷ {LABELS[anchor]} = {ratio:.2f} (target ≤ {limit:.2f})",
                    met))

    for (cls, method, params), g in groups.items():
        where = f"{cls}.{method}" + (f" ({param_text(dict(params))})" if params else "")
        if cls == "UncontendedBenchmark":
            check("1", where, "SEMA_BARGING", "JDK_NONFAIR", 1.0, g)
            check("1", where, "SEMA_FIFO", "JDK_NONFAIR", 1.1, g)
            for impl in ("SEMA_FIFO", "SEMA_BARGING"):
                if impl in g and not math.isnan(g[impl]["alloc"]):
                    a = g[impl]["alloc"]
                    out.append(("1", where, f"{LABELS[impl]} allocates {fmt(a)} B/op (target 0)",
                                "yes" if a < 0.5 else "no"))
        elif cls == "ContendedBenchmark":
            check("2", where, "SEMA_FIFO", "JDK_FAIR", 1 / 1.5, g)
            check("2", where, "SEMA_BARGING", "JDK_NONFAIR", 1.0, g)
        elif cls == "VirtualThreadBatchBenchmark":
            check("3", where, "SEMA_FIFO", "JDK_FAIR", 1.0, g)
        elif cls == "AsyncThroughputBenchmark":
            for impl in ("SEMA_FIFO", "SEMA_BARGING"):
                check("4", where, impl, "ASYNCUTIL_FAIR", 1.0, g)
                check("4", where, impl, "HAND_WRITTEN", 1 / 3, g)
        elif cls == "WeightedBenchmark":
            check("6", where, "SEMA_FIFO", "ASYNCUTIL_FAIR", 1.0, g)
            check("6", where, "SEMA_FIFO", "HAND_WRITTEN", 1.0, g)
    release = [r for r in rows if r["cls"] == "ReleaseCostBenchmark"]
    if release:
        _, spread = flatness(release)
        for impl in ("SEMA_FIFO", "SEMA_BARGING"):
            if impl in spread and not math.isnan(spread[impl]):
                out.append(("5", "ReleaseCostBenchmark.handOff",
                             f"{LABELS[impl]} largest ÷ smallest time = {spread[impl]:.2f} (target ≤ 1.50)",
                             "yes" if spread[impl] <= 1.5 else "no"))
            else:
                out.append(("5", "ReleaseCostBenchmark.handOff", f"{LABELS[impl]}: needs two queue lengths",
                            "not run"))
    out.sort(key=lambda t: t[0])
    return out


def settings(data, args):
    first = data[0] if data else {}
    lines = ["| setting | value |", "|---|---|"]

    def add(k, v):
        lines.append(f"| {k} | {v} |")

    add("mode", f"`{args.mode}`")
    add("date", args.date or "n/a")
    add("machine", args.machine or "n/a")
    add("JMH", first.get("jmhVersion", "n/a"))
    add("JDK", f"{first.get('vmName', '?')} {first.get('vmVersion', '?')} (`{first.get('jvm', '?')}`)")
    add("JVM arguments", "`" + " ".join(first.get("jvmArgs", [])) + "`" if first.get("jvmArgs") else "none")
    add("forks", first.get("forks", "n/a"))
    wi = first.get("warmupIterations", "?")
    add("warmup", "none" if wi == 0 else f"{wi} × {first.get('warmupTime', '?')}")
    add("measurement", f"{first.get('measurementIterations', '?')} × {first.get('measurementTime', '?')}")
    add("JMH arguments", f"`{args.jmh_args}`" if args.jmh_args else "n/a")
    return lines


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--results", required=True, help="JMH JSON result file (-rf json)")
    p.add_argument("--footprint", help="WaiterFootprint output (Markdown)")
    p.add_argument("--mode", default="?")
    p.add_argument("--jmh-args", default="")
    p.add_argument("--date", default="")
    p.add_argument("--machine", default="")
    args = p.parse_args()

    data, rows = load(args.results)
    w = []
    w.append("# Benchmarks")
    w.append("")
    w.append(f"Generated by `bin/benchmarks {args.mode}` from one JMH run: every implementation in a table ran "
             "in the same run with the same settings, so compare within a table, not across machines or runs. "
             "The benchmark sources (`sema-benchmarks/src/main/java/dev/sema/bench`) say what each one does "
             "and how to run it alone.")
    w.append("")
    w.append("How to read the tables: *score* is JMH's mean and *error* the half-width of its 99.9% confidence "
             "interval (n/a with a single iteration). A *time ÷ X* column is the implementation's time per "
             "operation divided by X's (for a throughput score, X's throughput divided by the "
             "implementation's): **below 1.00 is faster than X**. *B/op* is the memory allocated per "
             "operation (`-prof gc`).")
    w.append("")
    w.append("## Run settings")
    w.append("")
    w += settings(data, args)
    w.append("")
    w.append("## Targets")
    w.append("")
    w.append("Each checked on the scores alone; where a score's error bar crosses the target, treat it as "
             "undecided.")
    w.append("")
    w.append("| # | benchmark | measured | met |")
    w.append("|---|---|---|---|")
    for num, where, text, met in targets(rows):
        w.append(f"| {num} | {where} | {text} | {met} |")
    w.append(f"| 7 | WaiterFootprint | memory per waiter: see section 7 | "
             f"{'reported' if args.footprint else 'not run'} |")
    w.append("")

    for cls, title, text in SECTIONS:
        mine = [r for r in rows if r["cls"] == cls]
        w.append(f"## {title}")
        w.append("")
        w.append(text)
        w.append("")
        if not mine:
            w.append("Not run.")
            w.append("")
            continue
        groups = OrderedDict()
        for r in sorted(mine, key=lambda r: (r["method"], sorted(r["params"].items()))):
            groups.setdefault(group_key(r), []).append(r)
        for (_, method, params), g in groups.items():
            threads = g[0]["threads"]
            w.append(f"### `{method}` — " + (param_text(dict(params)) + ", " if params else "")
                     + f"{threads} thread{'s' if threads != 1 else ''}, mode {g[0]['mode']}")
            w.append("")
            w += table(g)
            w.append("")
        if cls == "ReleaseCostBenchmark":
            lines, _ = flatness(mine)
            if lines:
                w.append("### Flatness: time per hand-off against queue length")
                w.append("")
                w += lines
                w.append("")

    w.append("## 7. Memory per queued waiter")
    w.append("")
    if args.footprint:
        with open(args.footprint, encoding="utf-8") as f:
            w.append("Measured by `dev.sema.bench.WaiterFootprint` (its Javadoc gives the method): the heap "
                     "taken per queued waiter after full GCs.")
            w.append("")
            w.append(f.read().rstrip())
    else:
        w.append("Not run.")
    w.append("")
    sys.stdout.write("\n".join(w))


if __name__ == "__main__":
    main()
