#!/usr/bin/env python3
"""Turns a JMH JSON result file (and the WaiterFootprint and RedisComparison outputs) into docs/BENCHMARKS.md.

Standard library only. bin/benchmarks runs it; by hand:

    python3 sema-benchmarks/report.py --results jmh-result.json --footprint footprint.md \
        --redis redis-comparison.json --mode quick --jmh-args "-f 1 ..." > docs/BENCHMARKS.md

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
    ("NONE", "Sema, no listener"),
    ("EMPTY", "Sema, a listener that does nothing"),
    ("COUNTING", "Sema, counting listener"),
    ("METRICS", "Sema, SemaphoreMetrics bound (default: Sema's histograms)"),
    ("TIMERS", "Sema, SemaphoreMetrics bound, per-sample Micrometer timers"),
    ("TIMER_HISTOGRAMS", "Sema, SemaphoreMetrics bound, per-sample timers with percentile histograms"),
    ("CLOCK_TWICE", "two System.nanoTime() reads"),
    ("TIMER", "Micrometer Timer.record, one sample"),
    ("TIMER_HISTOGRAM", "Micrometer Timer.record, one sample, percentile histogram"),
])
ANCHORS = ["JDK_NONFAIR", "JDK_FAIR", "ASYNCUTIL_FAIR", "HAND_WRITTEN", "NONE"]

SECTIONS = [
    ("UncontendedBenchmark", "1. Uncontended acquire + release, one thread",
     "One thread acquires 1 permit and releases it (Sema with try-with-resources). B/op is JMH's "
     "`gc.alloc.rate.norm` (`-prof gc`)."),
    ("EscapingBenchmark", "1b. Uncontended, the permit escapes (stored in a field, returned)",
     "The same operation as section 1, but the grant is kept the way a request object, a future or a pool "
     "keeps it: stored in a field, or returned by a method the JIT may not inline. The JIT can no longer "
     "remove Sema's `Permit`; the JDK releases by count and keeps nothing. Read it beside section 1."),
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
    ("AsyncUncontendedBenchmark", "4b. Async acquire granted at once, then released",
     "One thread calls the async acquire of 1 free permit, takes the grant from the completed stage (which "
     "escapes, as in async code) and releases it."),
    ("ReleaseCostBenchmark", "5. Release cost against the number of queued async waiters",
     "One permit, held, with `queued` async waiters behind it; one operation releases it to the head "
     "waiter and queues a new waiter at the tail (the queue length stays constant)."),
    ("WeightedBenchmark", "6. Weighted requests of 1..8 permits on a limit of 16, 4 threads",
     "Each operation acquires a pseudo-random 1..8 permits (the same sequence for every implementation), "
     "runs a tiny section and releases. The async-only implementations block by joining their future."),
    ("ListenerCostBenchmark", "9. What observing a semaphore costs",
     "The same semaphore with no listener, a listener that does nothing (what the engine pays while anybody "
     "listens: the clock reads of the wait and hold times, and the calls), a listener that counts in LongAdders, "
     "and SemaphoreMetrics bound to a SimpleMeterRegistry (its default mode, Sema's histograms; per-sample Micrometer "
     "timers; per-sample timers with percentile histograms): `uncontended` "
     "is an acquire and release (two events), `queuedGrant` a request that queues and is granted by the release "
     "of the permit held (three events, its wait timed), `shared` two threads acquiring and releasing on one "
     "semaphore with permits to spare (ns per operation of each thread; both update the same meters)."),
    ("ObservingPartsBenchmark", "9b. The parts of observing, alone",
     "Two `System.nanoTime()` reads (what timing one hold needs: a figure of the machine's clock source), and one "
     "sample recorded by a Micrometer `Timer`, without and with a percentile histogram (SemaphoreMetrics records "
     "two per uncontended acquire + release)."),
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
        impl = params.pop("impl", None) or params.pop("observer", "?")
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
        elif cls == "EscapingBenchmark":
            check("1b", where, "SEMA_BARGING", "JDK_NONFAIR", 1.5, g)
            check("1b", where, "SEMA_FIFO", "JDK_NONFAIR", 1.5, g)
        elif cls == "AsyncUncontendedBenchmark":
            check("4b", where, "SEMA_FIFO", "ASYNCUTIL_FAIR", 1.25, g)
            check("4b", where, "SEMA_BARGING", "ASYNCUTIL_FAIR", 1.25, g)
        elif cls == "ListenerCostBenchmark" and method == "uncontended" and "METRICS" in g and "NONE" in g:
            added = g["METRICS"]["score"] - g["NONE"]["score"]
            out.append(("9", where, f"SemaphoreMetrics adds {added:.1f} ns per acquire + release (target ≤ 30)",
                        "yes" if added <= 30 else "no"))
            a = g["METRICS"]["alloc"]
            if not math.isnan(a):
                out.append(("9", where, f"SemaphoreMetrics allocates {fmt(a)} B/op (target 0)",
                            "yes" if a < 0.5 else "no"))
            if "EMPTY" in g:
                floor = g["EMPTY"]["score"] - g["NONE"]["score"]
                out.append(("9", where, f"a listener that does nothing adds {floor:.1f} ns (the clock reads of the "
                            "hold time; section 9b prices them alone)", "—"))
                own = g["METRICS"]["score"] - g["EMPTY"]["score"]
                out.append(("9", where, f"SemaphoreMetrics adds {own:.1f} ns beyond a listener that does nothing "
                            "(its own work: the histogram samples)", "—"))
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


# ---------------------------------------------------------------- Redis: Sema vs Redisson

REDIS_IMPLS = [("SEMA", "Sema"), ("REDISSON", "Redisson")]
BACKGROUND = {"ping"}  # connection keep-alives, not caused by the operations


def per_op(counts, ops, skip=BACKGROUND):
    return sum(v for k, v in (counts or {}).items() if k not in skip) / ops if ops else float("nan")


def rate(x):
    """Two decimals, or three for a small rate that two would show as 0.00."""
    return f"{x:.3f}" if 0 < x < 0.005 else f"{x:.2f}"


def breakdown(counts, ops, skip=()):
    """'EVALSHA 1.00, PUBLISH 0.50' per operation, largest first."""
    items = [(k, v) for k, v in (counts or {}).items() if k not in skip and v]
    if not items or not ops:
        return "none"
    items.sort(key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(f"{k.upper()} {rate(v / ops)}" for k, v in items)


def sent(counts, scripts, ops, skip=BACKGROUND):
    """Like breakdown, with EVALSHA split by script: 'EVALSHA 2.00 (ACQUIRE 1.00, RELEASE 1.00)'."""
    text = breakdown(counts, ops, skip)
    if scripts and ops and (counts or {}).get("evalsha"):
        items = sorted(((k, v) for k, v in scripts.items() if v), key=lambda kv: (-kv[1], kv[0]))
        detail = ", ".join(f"{k} {rate(v / ops)}" for k, v in items)
        text = text.replace(f"EVALSHA {rate(counts['evalsha'] / ops)}",
                            f"EVALSHA {rate(counts['evalsha'] / ops)} ({detail})", 1)
    return text


def script_count(scripts, name):
    return (scripts or {}).get(name, 0)


def median(xs):
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return float("nan")
    mid = len(xs) // 2
    return xs[mid] if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2


def mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else float("nan")


def ratio(a, b):
    if a is None or b is None or math.isnan(a) or math.isnan(b) or b == 0:
        return "n/a"
    return f"{a / b:.2f}"


def script_micros(window, ops):
    """Redis time in EVAL/EVALSHA per operation (commandstats usec; includes the commands they ran)."""
    m = (window or {}).get("executedMicros") or {}
    t = sum(v for k, v in m.items() if k in ("eval", "evalsha", "eval_ro", "evalsha_ro", "fcall"))
    return t / ops if ops else float("nan")


def redis_targets(doc):
    out = []
    if not doc:
        return out
    sema = doc["implementations"].get("SEMA", {}).get("roundTrips", {})
    for op, label in (("acquire", "acquire"), ("release", "release")):
        w = sema.get(op)
        if not w:
            continue
        v = per_op(w["issued"], w["ops"])
        out.append(("R", f"RedisComparison: Sema uncontended {label}",
                    f"{v:.2f} round trips (claim: 1)", "yes" if abs(v - 1) < 0.005 else "no"))
    impls = doc["implementations"]
    S, R = impls.get("SEMA"), impls.get("REDISSON")
    if not S or not R:
        return out
    try:
        pair = S["roundTrips"]["acquireRelease"]
        cmds = per_op(pair["executed"], pair["ops"])
        out.append(("R", "RedisComparison: Redis commands per uncontended acquire + release",
                    f"Sema {cmds:.1f} (target ≤ 12)", "yes" if cmds <= 12.05 else "no"))
        sm = script_micros(S["uncontended"], S["uncontended"].get("ops"))
        rm = script_micros(R["uncontended"], R["uncontended"].get("ops"))
        out.append(("R", "RedisComparison: Redis time in scripts per uncontended acquire + release",
                    f"Sema ÷ Redisson = {ratio(sm, rm)} (target ≤ 1.00)", "yes" if sm <= rm else "no"))
        for key, label in (("uncontended", "uncontended, 1 thread"),
                           ("contended", f"contended, {S['contended']['threads']} threads, limit "
                                         f"{S['contended']['permits']}")):
            a, b = mean(S[key]["opsPerSecond"]), mean(R[key]["opsPerSecond"])
            out.append(("R", f"RedisComparison: throughput, {label}",
                        f"Sema ÷ Redisson = {ratio(a, b)} (target ≥ 1.20)", "yes" if a >= 1.2 * b else "no"))
        for k in ("p50", "p99"):
            a, b = S["wakeup"]["latencyMicros"][k], R["wakeup"]["latencyMicros"][k]
            out.append(("R", f"RedisComparison: wake-up latency {k}",
                        f"Sema ÷ Redisson = {ratio(a, b)} (target ≤ 1.00)", "yes" if a <= b else "no"))
    except (KeyError, TypeError):
        pass
    return out


def redis_section(doc, problem):
    w = ["## 8. Redis: Sema vs Redisson", ""]
    if not doc:
        w.append(f"Not run: {problem}" if problem else "Not run.")
        w.append("")
        return w
    env, st, impls = doc["environment"], doc["settings"], doc["implementations"]
    S, R = impls["SEMA"], impls["REDISSON"]
    lease_s = st["leaseMillis"] / 1000
    netty = ", ".join(env.get("nettyVersions", [])) or "?"
    w.append(
        f"Sema's `RedisSemaphore` (sema-redis, Lettuce {env.get('lettuce', '?')}) against Redisson "
        f"{env.get('redisson', '?')}'s `RPermitExpirableSemaphore`, in one JVM (both on Netty {netty}) against "
        f"one Redis {env.get('redis', '?')} "
        f"{'started on a loopback port for the run' if env.get('redisStarted') else 'given by SEMA_REDIS_URI'}, "
        f"in `{doc.get('mode', '?')}` mode ({doc.get('seconds', 0):.0f} s). Every grant has a {lease_s:g} s lease "
        "(Sema renews it while held; Redisson's lease is fixed). Redisson runs with its default configuration "
        f"(`useScriptCache={json.dumps(env.get('redissonConfig', {}).get('useScriptCache'))}`, "
        f"{env.get('redissonConfig', {}).get('connectionMinimumIdleSize')} idle pooled connections, "
        f"{env.get('redissonConfig', {}).get('nettyThreads')} Netty threads). "
        f"Machine load average (1 min) before / after: {env.get('loadAverageBefore', 'n/a')} / "
        f"{env.get('loadAverageAfter', 'n/a')} on {env.get('cores', '?')} cores.")
    w.append("")
    w.append(
        "Method: `dev.sema.bench.redis.RedisComparison`, a plain timed program rather than JMH (both clients "
        "keep connections, I/O threads and timers). *Round trips* are the commands a client sent, counted "
        "with `MONITOR` (which tells a client's commands from those its Lua scripts run) and attributed to "
        "the client by connection name; *commands executed* are `INFO commandstats` deltas "
        "(`CONFIG RESETSTAT` before, the observer's own commands subtracted), which count the commands run "
        "inside scripts as well. Throughput: a warm-up per implementation, then "
        f"{st['rounds']} round{'s' if st['rounds'] != 1 else ''} of {st['roundSeconds']:g} s alternating the "
        "implementations (their order reversed every round); ops/s is "
        "acquire + release pairs per second. Wake-up: holder A and waiter B are separate clients; A holds "
        "the only permit, B blocks in `acquire`, and once B is waiting (queued in Redis for Sema; subscribed "
        "and parked on its latch for Redisson) A releases: latency is from just before A's `release` call "
        "to just after B's `acquire` returns.")
    w.append("")

    def rt(impl, op):
        x = impl["roundTrips"][op]
        return per_op(x["issued"], x["ops"])

    def executed(impl, op):
        x = impl["roundTrips"][op]
        return per_op(x["executed"], x["ops"])

    def cont_rt(impl):
        c = impl["contended"]["counted"]
        return per_op(c["issued"], c["ops"])

    def cycle(impl, role):
        c = impl["wakeup"]["counted"]
        return per_op(c[role + "Issued"], c["trials"])

    def idle_rate(impl, role):
        x = impl["idleWait"]
        return per_op(x[role + "Issued"], x["seconds"])

    ps = S["wakeup"]["latencyMicros"], R["wakeup"]["latencyMicros"]
    rows = [
        ("round trips per uncontended acquire", rt(S, "acquire"), rt(R, "acquire"), 2),
        ("round trips per uncontended release", rt(S, "release"), rt(R, "release"), 2),
        ("Redis commands executed per uncontended acquire + release (scripts' commands included)",
         executed(S, "acquireRelease"), executed(R, "acquireRelease"), 1),
        ("Redis time in scripts per uncontended acquire + release (µs; commandstats over the throughput "
         "rounds, without MONITOR)",
         script_micros(S["uncontended"], S["uncontended"].get("ops")),
         script_micros(R["uncontended"], R["uncontended"].get("ops")), 1),
        ("uncontended acquire + release per second, 1 thread (mean of rounds)",
         mean(S["uncontended"]["opsPerSecond"]), mean(R["uncontended"]["opsPerSecond"]), 0),
        (f"contended acquire + release per second, {S['contended']['threads']} threads, limit "
         f"{S['contended']['permits']} (mean of rounds)",
         mean(S["contended"]["opsPerSecond"]), mean(R["contended"]["opsPerSecond"]), 0),
        ("round trips per contended acquire + release", cont_rt(S), cont_rt(R), 2),
    ]
    for k in ("p50", "p90", "p99", "max"):
        rows.append((f"wake-up latency {k} (µs)", ps[0][k], ps[1][k], 0))
    def herd(impl):
        h = impl.get("herd")
        return per_op(h["waitersIssued"], h["handOffs"]) if h else float("nan")

    hw = S.get("herd", {}).get("waiters", "?")
    rows += [
        ("round trips of the waiter per blocked acquire + release", cycle(S, "waiter"), cycle(R, "waiter"), 2),
        ("commands per second sent by a client while it waits", idle_rate(S, "waiter"), idle_rate(R, "waiter"), 2),
        (f"round trips of {hw} waiting clients per hand-off (acquire + hold + release each)", herd(S), herd(R), 2),
    ]
    w.append("| measure | Sema | Redisson | Redisson ÷ Sema |")
    w.append("|---|---:|---:|---:|")
    for label, a, b, dec in rows:
        def f(x):
            return "n/a" if x is None or math.isnan(x) else f"{x:,.{dec}f}"
        w.append(f"| {label} | {f(a)} | {f(b)} | {ratio(b, a)} |")
    w.append("")
    w.append("*Redisson ÷ Sema*: for the per-second throughput rows above 1.00 means Redisson did more; for every "
             "other row above 1.00 means Redisson needed more (commands, time). Compare within this table only: "
             "one machine, one run.")
    w.append("")

    # Round trips in detail
    w.append("### Commands per operation")
    w.append("")
    w.append("*Sent* are the client's round trips (MONITOR), EVALSHA split by script (named by SHA-1: "
             "Sema's from sema-redis's script files, Redisson's by the operation that first ran them), *in "
             "scripts* the commands its Lua scripts ran, *executed* everything `commandstats` counted; all per "
             "operation. PING (connection keep-alive) is left out of the round trips.")
    w.append("")
    w.append("| implementation | operation | sent | in scripts | executed (commandstats) |")
    w.append("|---|---|---|---|---|")
    for key, name in REDIS_IMPLS:
        impl = impls[key]
        for op, label in (("acquire", f"acquire ({impl['roundTrips']['acquire']['ops']:,} held at the end)"),
                          ("release", "release"), ("acquireRelease", "acquire + release")):
            x = impl["roundTrips"][op]
            w.append(f"| {name} | uncontended {label} | {sent(x['issued'], x.get('scripts'), x['ops'])} | "
                     f"{breakdown(x['inScripts'], x['ops'])} | {per_op(x['executed'], x['ops']):.2f} |")
        c = impl["contended"]
        x = c["counted"]
        w.append(f"| {name} | contended acquire + release ({c['threads']} threads, limit {c['permits']}; "
                 f"one {x['seconds']:.1f} s MONITOR round, {x['ops']:,} ops) | "
                 f"{sent(x['issued'], x.get('scripts'), x['ops'])} | {breakdown(x['inScripts'], x['ops'])} | "
                 f"{per_op(x['executed'], x['ops']):.2f} |")
        wc = impl["wakeup"]["counted"]
        w.append(f"| {name} | blocked acquire + release of the waiter ({wc['trials']} wake-up cycles) | "
                 f"{sent(wc['waiterIssued'], wc.get('waiterScripts'), wc['trials'])} | – | – |")
        w.append(f"| {name} | acquire + release of the holder in those cycles | "
                 f"{sent(wc['holderIssued'], wc.get('holderScripts'), wc['trials'])} | – | – |")
    w.append("")

    # Throughput
    w.append("### Throughput rounds")
    w.append("")
    w.append("| implementation | scenario | ops/s per round | mean | commands executed per op | "
             "ops per thread (fewest ÷ most) |")
    w.append("|---|---|---|---:|---:|---|")
    for key, name in REDIS_IMPLS:
        impl = impls[key]
        u = impl["uncontended"]["opsPerSecond"]
        w.append(f"| {name} | uncontended, 1 thread | {', '.join(f'{x:,.0f}' for x in u)} | {mean(u):,.0f} | "
                 f"{per_op(impl['uncontended'].get('executed'), impl['uncontended'].get('ops')):.2f} | – |")
        c = impl["contended"]
        spread = []
        for per in c.get("opsPerThread", []):
            if per and max(per) > 0:
                spread.append(min(per) / max(per))
        w.append(f"| {name} | contended, {c['threads']} threads, limit {c['permits']} | "
                 f"{', '.join(f'{x:,.0f}' for x in c['opsPerSecond'])} | {mean(c['opsPerSecond']):,.0f} | "
                 f"{per_op(c['executed'], c['ops']):.2f} | "
                 f"{', '.join(f'{x:.2f}' for x in spread) or 'n/a'} |")
    w.append("")

    # Wake-up
    w.append("### Wake-up latency")
    w.append("")
    w.append("Microseconds from just before the holder's `release` call to just after the waiter's `acquire` "
             "returns; *release call* is how long the holder's `release` itself took.")
    w.append("")
    w.append("| implementation | trials | min | p50 | p90 | p99 | max | mean | release call p50 | release call p99 |")
    w.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for key, name in REDIS_IMPLS:
        x = impls[key]["wakeup"]
        p, rc = x["latencyMicros"], x["releaseCallMicros"]
        w.append(f"| {name} | {x['trials']} | {p['min']:,.0f} | {p['p50']:,.0f} | {p['p90']:,.0f} | "
                 f"{p['p99']:,.0f} | {p['max']:,.0f} | {p['mean']:,.0f} | {rc['p50']:,.0f} | {rc['p99']:,.0f} |")
    w.append("")

    # Idle
    w.append("### While a client waits")
    w.append("")
    w.append("The holder holds the only permit and the waiter is blocked in `acquire` for the time shown; what "
             "each client sent meanwhile (MONITOR), PING included.")
    w.append("")
    w.append("| implementation | seconds | holder sent | waiter sent |")
    w.append("|---|---:|---|---|")
    for key, name in REDIS_IMPLS:
        x = impls[key]["idleWait"]
        w.append(f"| {name} | {x['seconds']:.1f} | {sent(x['holderIssued'], x.get('holderScripts'), 1, ())} | "
                 f"{sent(x['waiterIssued'], x.get('waiterScripts'), 1, ())} |")
    w.append("")

    # Several waiting clients
    if S.get("herd") and R.get("herd"):
        w.append("### Several waiting clients")
        w.append("")
        h0 = S["herd"]
        rounds = h0.get("rounds", 1)
        w.append(f"{h0['waiters']} waiter clients (as {h0['waiters']} processes) block on a limit of 1 that the "
                 f"holder holds; the holder releases, and each waiter in turn acquires, holds the permit "
                 f"{h0['holdMillis']} ms and releases it: {h0['waiters']} hand-offs, "
                 f"{rounds} round{'s' if rounds != 1 else ''} of them. What the waiters sent meanwhile (MONITOR), "
                 "per hand-off; and the time from the holder's release to the last waiter's grant (at least "
                 f"{(h0['waiters'] - 1) * h0['holdMillis']} ms of holding).")
        w.append("")
        w.append("| implementation | waiters sent per hand-off | total | release to last grant, median of rounds "
                 "(ms) |")
        w.append("|---|---|---:|---:|")
        for key, name in REDIS_IMPLS:
            h = impls[key]["herd"]
            ms = h["millisToLast"] if isinstance(h["millisToLast"], list) else [h["millisToLast"]]
            w.append(f"| {name} | {sent(h['waitersIssued'], h.get('waitersScripts'), h['handOffs'])} | "
                     f"{herd(impls[key]):.2f} | {median(ms):,.1f} |")
        w.append("")

    # Observations derived from the numbers
    notes = []
    rr = R["roundTrips"]["release"]
    sr = S["roundTrips"]["release"]
    rpub = (rr["inScripts"] or {}).get("publish", 0) / rr["ops"]
    spub = (sr["inScripts"] or {}).get("publish", 0) / sr["ops"]
    if rpub > 0:
        notes.append(f"Redisson's release script PUBLISHes on every release ({rpub:.2f} per uncontended release, "
                     f"with nobody waiting) to one channel per semaphore that every waiting process "
                     f"subscribes to; Sema's publishes only to a process it granted ({spub:.2f} here).")
    rc = R["wakeup"]["counted"]
    sub = (rc["waiterIssued"] or {}).get("subscribe", 0) / rc["trials"]
    if sub > 0:
        notes.append(f"A Redisson acquire that has to wait subscribes and unsubscribes each time "
                     f"(SUBSCRIBE {sub:.2f} per blocked acquire) and tries again after every wake-up message: "
                     f"its waiter sent {cycle(R, 'waiter'):.2f} commands per blocked acquire + release, "
                     f"Sema's {cycle(S, 'waiter'):.2f}.")
    ci = cont_rt(R) - rt(R, "acquireRelease")
    if ci > 0.05:
        notes.append(f"Under contention Redisson needed {cont_rt(R):.2f} round trips per acquire + release "
                     f"(Sema {cont_rt(S):.2f}): tries that failed after a wake-up message another thread "
                     "won, and a SUBSCRIBE and UNSUBSCRIBE whenever an acquire has to wait.")
    if R.get("herd") and S.get("herd"):
        n = R["herd"]["handOffs"]
        tries = script_count(R["herd"].get("waitersScripts"), "ACQUIRE")
        k = R["herd"]["waiters"]
        notes.append(f"With {k} waiting clients, Redisson's waiters sent {herd(R):.2f} commands "
                     f"per hand-off (Sema's {herd(S):.2f}): besides their releases, {tries / n:.2f} acquire tries "
                     f"per grant, as every release's PUBLISH wakes every waiting process and all but one "
                     f"try in vain (({k} + {k - 1} + ... + 1) / {k} = {(k + 1) / 2:.2f} if every waiter tries "
                     "every time). Sema hands the permit to the head of its queue inside the release script and "
                     "tells only that process.")
    sc = S["wakeup"]["counted"]
    renews = script_count(sc.get("waiterScripts"), "RENEW") / sc["trials"]
    if renews > 0:
        herd_renews = (script_count(S["herd"].get("waitersScripts"), "RENEW") / S["herd"]["handOffs"]
                       if S.get("herd") else float("nan"))
        notes.append(f"Sema's waiter sent {cycle(S, 'waiter'):.2f} commands per blocked acquire + release, not 2: "
                     f"RENEW {renews:.2f}. After a grant pushed by a wake-up message it sends one RENEW to "
                     "replace the lease deadline it had to assume with a measured one, if it still holds the "
                     "permit when that runs; the wake-up trials release at once, so often it no longer does"
                     + (f", while the waiters of the hand-offs above, each holding the permit "
                        f"{S['herd']['holdMillis']} ms, sent RENEW {herd_renews:.2f} per hand-off."
                        if S.get("herd") else "."))
    cs = S["contended"]["counted"]
    cancels = script_count(cs.get("scripts"), "CANCEL") / cs["ops"] if cs["ops"] else 0
    if cancels > 0:
        notes.append(f"Under contention Sema also sent CANCEL {cancels:.3f} and RENEW "
                     f"{script_count(cs.get('scripts'), 'RENEW') / cs['ops']:.2f} per acquire + release.")
    iw = idle_rate(R, "waiter")
    si = idle_rate(S, "waiter")
    notes.append(f"While waiting, a Sema client sent {si:.2f} commands per second (its waiter heartbeat, RENEW, "
                 f"at most once a second) and a Redisson client {iw:.2f}: Redisson's waiter does not poll; it "
                 f"waits for the release's PUBLISH, or at most until the nearest lease of a holder ends "
                 f"({lease_s:g} s here), then tries again.")
    w.append("Observations (derived from the numbers above):")
    w.append("")
    for n in notes:
        w.append(f"- {n}")
    w.append("")
    return w


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


ADAPTIVE_HEADING = "## 10. Adaptive limits: Sema vs Netflix concurrency-limits"
FLEET_HEADING = "## 11. Adaptive limits across a fleet: one RedisSemaphore"
FLEETRUN_HEADING = "## 12. A fleet on one Redis: Sema vs Redisson"
SPRING_HEADING = "## 13. Spring Boot: what the sema.web filter and @WithPermits add per request"
PARTITIONS_HEADING = "## 14. Partitions under overload: Sema vs a flat limit, a static split and Netflix"
KEYED_HEADING = "## 15. Keyed semaphores: Sema vs a Resilience4j registry and a Caffeine cache"
STACKS_HEADING = "## 16. Non-blocking stacks: Reactor, Kotlin coroutines, gRPC"
KEYED_METHODS = [("liveKey", "Sema `KeyedSemaphore`, a live key"),
                 ("freshKey", "Sema `KeyedSemaphore`, a key created and removed by the request"),
                 ("plainSema", "Sema `Semaphore` (FIFO)"), ("plainJdk", "JDK `Semaphore`, non-fair")]
SPRING_PARTS = [("none", "none"), ("filter", "`sema.web` filter"), ("annotation", "`@WithPermits`"),
                ("both", "filter and `@WithPermits`")]
SPRING_WAYS = [("mvc", "in process (MockMvc)"), ("http", "over loopback HTTP")]


def read_text(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError:
        return ""


def extract_section(doc, heading):
    """The section of a BENCHMARKS.md under this heading, heading included, or "" when it has none."""
    start = doc.find(heading)
    if start < 0:
        return ""
    end = doc.find("\n## ", start + len(heading))
    return doc[start:] if end < 0 else doc[start:end + 1]


def replace_section(doc, heading, section):
    old = extract_section(doc, heading)
    if old:
        return doc.replace(old, section.rstrip("\n") + "\n")
    return doc.rstrip("\n") + "\n\n" + section


def spliced(results, analysis_path):
    """A simulation's results file, then its analysis file if there is one, as section lines."""
    w = [read_text(results).rstrip(), ""]
    analysis = read_text(analysis_path) if analysis_path else ""
    if analysis:
        w += [analysis.rstrip(), ""]
    return w


def fleet_section(args, date):
    w = [FLEET_HEADING, ""]
    w.append("Generated by `bin/benchmarks adaptive-fleet` (`dev.sema.bench.adaptive.AdaptiveFleetSimulation`, whose "
             "Javadoc gives the model)" + (f" on {date}" if date else "") + (f", {args.machine}" if args.machine else "")
             + ". Four JVM processes share one downstream (an HTTP server on a loopback port, with the same model "
             "as section 10: a capacity, a queue, callers that give up while the server still works). In the "
             "first run they admit through one `RedisSemaphore`, each with its own `AdaptiveLimit.gradient()` "
             "adjusting the one shared limit; in the second, each adapts a local semaphore of its own, and the "
             "fleet's limit is the sum of the four. *Fleet limit at C*: the mean over the second half of the "
             "phase with capacity C; *settle*: as in section 10; *peak served at once*: the most calls the "
             "downstream served together (its capacity caps it).")
    w.append("")
    return w + spliced(args.splice_fleet, args.fleet_analysis)


def fleetrun_section(args, date):
    mode = args.mode if args.mode in ("full", "quick", "smoke") else ""
    w = [FLEETRUN_HEADING, ""]
    w.append(f"Generated by `bin/benchmarks fleet{' ' + mode if mode else ''}` (`dev.sema.bench.fleet.FleetRun`, whose "
             "Javadoc gives the model)" + (f" on {date}" if date else "") + (f", {args.machine}" if args.machine else "")
             + ". Several JVM processes, each with 64 virtual threads, run short tasks against 100 semaphores on one "
             "Redis: first with Sema's `RedisSemaphore`, then with Redisson's `RPermitExpirableSemaphore` (the same "
             "lease, blocking acquire, Redisson's default configuration), on the same Redis, flushed in between. "
             "Every task counts itself as a holder on a second Redis (the *referee*) while it holds its permit, so "
             "that the limit is checked from outside the implementations without touching the measured Redis. "
             "Compare within this section only: one machine, one run.")
    if mode in ("quick", "smoke"):
        w.append("")
        w.append(f"**A {mode} run**: shorter windows and fewer process counts than `bin/benchmarks fleet full`; "
                 "indicative numbers.")
    w.append("")
    return w + spliced(args.splice_fleetrun, args.fleetrun_analysis)


def partitions_section(args, date):
    mode = args.mode if args.mode in ("full", "quick", "smoke") else ""
    w = [PARTITIONS_HEADING, ""]
    w.append(f"Generated by `bin/benchmarks partitions{' ' + mode if mode else ''}` "
             "(`dev.sema.bench.partitions.PartitionSimulation`, whose Javadoc gives the model)"
             + (f" on {date}" if date else "") + (f", {args.machine}" if args.machine else "")
             + ". A closed-loop simulation in real time: a downstream that serves L requests at once, behind a limit of "
             "L, and three classes of clients (checkout, browse, batch; shares 0.6, 0.3, 0.1, in that priority order), "
             "each client waiting a bounded time for a permit. Four limiters face the same seeded workload, one after "
             "the other in one JVM: *sema-partitioned* (one `Semaphore` with three partitions, §11a of the API), "
             "*sema-flat* (one `Semaphore` of L for everybody), *static-split* (one `Semaphore` per class with its "
             "guarantee as its limit) and *netflix-partitioned* (concurrency-limits' partitioned limiter on a fixed "
             "limit of L, behind its `BlockingLimiter` for the wait). *In flight* is counted by the clients, outside "
             "the limiters, from the grant to the release. Compare within this section only: one machine, one run.")
    if mode in ("quick", "smoke"):
        w.append("")
        w.append(f"**A {mode} run**: shorter runs than `bin/benchmarks partitions full`; indicative numbers.")
    w.append("")
    return w + spliced(args.splice_partitions, args.partitions_analysis)


def keyed_section(args, date):
    mode = args.mode if args.mode in ("full", "quick", "smoke") else ""
    w = [KEYED_HEADING, ""]
    w.append(f"Generated by `bin/benchmarks keyed{' ' + mode if mode else ''}` (`dev.sema.bench.keyed.KeyedFlood` and "
             "`dev.sema.bench.keyed.KeyedBenchmark`, whose Javadoc gives the method)"
             + (f" on {date}" if date else "") + (f", {args.machine}" if args.machine else "")
             + ". A limit per key (tenant, user, API key) three ways: Sema's `KeyedSemaphore` (§11b of the API: a key's "
             "semaphore made on first use and removed the moment it is idle, at most `maxKeys` live), Resilience4j's "
             "`BulkheadRegistry` with one bulkhead per key, and a Caffeine cache of `java.util.concurrent.Semaphore` "
             "with `expireAfterAccess`. The memory and race runs come first, in one JVM; the JMH run last. "
             "Compare within this section only: one machine, one run.")
    if mode in ("quick", "smoke"):
        w.append("")
        w.append(f"**A {mode} run**: fewer keys and shorter measurements than `bin/benchmarks keyed full`; "
                 "indicative numbers.")
    w.append("")
    w += [read_text(args.splice_keyed).rstrip(), ""]
    w.append("### Request cost: acquire + release, one thread")
    w.append("")
    rows = []
    if args.keyed_jmh:
        data, rows = load(args.keyed_jmh)
        rows = [r for r in rows if r["cls"] == "KeyedBenchmark"]
    if not rows:
        w += ["Not run.", ""]
    else:
        by = {r["method"]: r for r in rows}
        raw = rows[0]["raw"]
        w.append(f"JMH {raw.get('jmhVersion', '?')}, {raw.get('forks', '?')} fork(s), warm-up "
                 f"{raw.get('warmupIterations', '?')} × {raw.get('warmupTime', '?')}, measurement "
                 f"{raw.get('measurementIterations', '?')} × {raw.get('measurementTime', '?')}, `-prof gc`, all four in "
                 "the same run. The users' path: `family.get(key).acquire()` in try-with-resources (the Permit's "
                 "`close()`); the live key has another permit held from set-up to tear-down, so it stays live. "
                 + (f"The machine was shared with other builds while it ran (load average {args.keyed_load})."
                    if args.keyed_load else ""))
        w.append("")
        w.append("| request | score | error (99.9%) | unit | B/op | time ÷ Sema `Semaphore` | time ÷ JDK `Semaphore` |")
        w.append("|---|---:|---:|---|---:|---:|---:|")
        for method, label in KEYED_METHODS:
            r = by.get(method)
            if not r:
                continue
            cells = [label, fmt(r["score"]), fmt(r["error"], r["score"]), r["unit"],
                     fmt(r["alloc"]) if not math.isnan(r["alloc"]) else "n/a"]
            for anchor in ("plainSema", "plainJdk"):
                cells.append(f"{time_ratio(r, by[anchor]):.2f}" if anchor in by else "n/a")
            w.append("| " + " | ".join(cells) + " |")
        w.append("")
        if "liveKey" in by and "plainSema" in by:
            ratio = time_ratio(by["liveKey"], by["plainSema"])
            w.append(f"Target: a request on a live key at most 1.5 × a plain Sema `Semaphore`'s time: **{ratio:.2f}×, "
                     f"{'met' if ratio <= 1.5 else 'not met'}**.")
            w.append("")
    analysis = read_text(args.keyed_analysis) if args.keyed_analysis else ""
    if analysis:
        w += [analysis.rstrip(), ""]
    return w


def ratio_with_error(a, b):
    """a.score / b.score and its error, the two relative errors (JMH's 99.9% half-widths) added in quadrature."""
    x, y = a["score"], b["score"]
    if not x or not y or math.isnan(x) or math.isnan(y):
        return float("nan"), float("nan")
    r = x / y
    if math.isnan(a["error"]) or math.isnan(b["error"]):
        return r, float("nan")  # a single iteration has no error bar
    ex, ey = a["error"] / x, b["error"] / y
    return r, r * math.sqrt(ex * ex + ey * ey)


def pm(r, e):
    """A ratio and its error, or the ratio alone when it has none."""
    if math.isnan(r):
        return "n/a"
    return f"{r:.2f}" if math.isnan(e) else f"{r:.2f} ± {e:.2f}"


def verdict(r, e, limit, at_most=True):
    """met / not met against a ratio target, and whether the error bar decides it."""
    if math.isnan(r):
        return "not measured"
    ok = r <= limit if at_most else r >= limit
    lo, hi = r - (e if not math.isnan(e) else 0.0), r + (e if not math.isnan(e) else 0.0)
    decided = (hi <= limit or lo > limit) if at_most else (lo >= limit or hi < limit)
    if ok:
        return "met" if decided else "met on the means, within the error bars"
    return "not met" if decided else "not met on the means, within the error bars"


def secondary(row, name):
    for key, metric in (row["raw"].get("secondaryMetrics") or {}).items():
        if key.lstrip("\u00b7") == name:
            return number(metric.get("score"))
    return float("nan")


def jmh_settings(rows):
    raw = rows[0]["raw"]
    warmup = (f"{raw.get('warmupIterations', '?')} × {raw.get('warmupTime', '?')}"
              if raw.get("warmupIterations") != 0 else "none")
    return (f"JMH {raw.get('jmhVersion', '?')}, {raw.get('forks', '?')} fork(s), warm-up {warmup}, measurement "
            f"{raw.get('measurementIterations', '?')} × {raw.get('measurementTime', '?')}, `-prof gc`")


def b_op(r):
    return fmt(r["alloc"]) if not math.isnan(r["alloc"]) else "n/a"


STACKS_REACTOR = (("none", "no limiter (`transformDeferred` of an operator that adds nothing)"),
                  ("sema", "Sema `SemaReactor.withPermits(semaphore, 1)`"),
                  ("resilience4j", "Resilience4j `BulkheadOperator` (semaphore bulkhead)"))
STACKS_GRPC = (("none", "no interceptor"),
               ("sema", "Sema `SemaServerInterceptor`"),
               ("netflix", "Netflix `ConcurrencyLimitServerInterceptor` (fixed limit)"))


def stacks_section(args, date):
    mode = args.mode if args.mode in ("full", "quick", "smoke") else ""
    targets = []
    w = [STACKS_HEADING, ""]
    w.append(f"Generated by `bin/benchmarks stacks{' ' + mode if mode else ''}` (`dev.sema.bench.stacks` in sema-benchmarks "
             "and `dev.sema.kotlin.bench.WithPermitBenchmark` in sema-kotlin's test sources, whose Javadoc gives the "
             "method)" + (f" on {date}" if date else "") + (f", {args.machine}" if args.machine else "")
             + ". The non-blocking modules of §12 of the API against what users of each stack reach for: Reactor "
             "(Resilience4j's bulkhead operator), Kotlin coroutines (kotlinx.coroutines' own `Semaphore`) and gRPC "
             "(Netflix concurrency-limits' server interceptor). Reactor and gRPC ran side by side in one JMH run, "
             "the Kotlin pair in a second one (sema-kotlin's class path), right after it. A *ratio* is a time per "
             "operation divided by another's in the same run, ± its error (the two 99.9% half-widths, relative, "
             "added in quadrature). Compare within this section only: one machine, one run."
             + (f" The machine was shared with other builds while it ran (load average {args.stacks_load}), so "
                "the errors are wide; the allocation per operation (*B/op*) does not depend on the load."
                if args.stacks_load else ""))
    if mode in ("quick", "smoke"):
        w.append("")
        w.append(f"**A {mode} run**: fewer forks and shorter measurements than `bin/benchmarks stacks full`; "
                 "indicative numbers.")
    w.append("")
    rows = load(args.splice_stacks)[1] if args.splice_stacks else []
    krows = load(args.stacks_kotlin)[1] if args.stacks_kotlin else []

    # 16a
    w.append("### 16a. Reactor: a Mono whose permit is free")
    w.append("")
    granted = {r["params"].get("limiter"): r for r in rows if r["cls"] == "ReactorGrantedBenchmark"}
    if not granted:
        w += ["Not run.", ""]
    else:
        w.append(jmh_settings(list(granted.values())) + ". One thread subscribes to "
                 "`Mono.just(1).transformDeferred(limiter)` with the same small subscriber for all three, on a limit "
                 "of 16 that is never reached (Resilience4j's `maxWaitDuration` 0, its default). *Added*: the time "
                 "beyond the baseline's.")
        w.append("")
        w.append("| limiter | score | error (99.9%) | unit | B/op | added | time ÷ Resilience4j |")
        w.append("|---|---:|---:|---|---:|---:|---:|")
        for key, label in STACKS_REACTOR:
            r = granted.get(key)
            if not r:
                continue
            added = fmt(r["score"] - granted["none"]["score"]) if "none" in granted and key != "none" else "-"
            rr, re_ = ratio_with_error(r, granted["resilience4j"]) if "resilience4j" in granted else (float("nan"),) * 2
            w.append(f"| {label} | {fmt(r['score'])} | {fmt(r['error'], r['score'])} | {r['unit']} | {b_op(r)} | "
                     f"{added} | {pm(rr, re_)} |")
        w.append("")
        if "sema" in granted and "resilience4j" in granted:
            rr, re_ = ratio_with_error(granted["sema"], granted["resilience4j"])
            targets.append(("16a", "Reactor, granted at once: Sema's time ÷ Resilience4j's ≤ 1.00",
                            pm(rr, re_), verdict(rr, re_, 1.0)))

    # 16b
    w.append("### 16b. Reactor: 1,000 subscribers at once on a limit of 16")
    w.append("")
    waiting = [r for r in rows if r["cls"] == "ReactorWaitingBenchmark"]
    if not waiting:
        w += ["Not run.", ""]
    else:
        w.append(jmh_settings(waiting) + ". 1,000 subscriptions at once; each request's work is a `publishOn` "
                 "hop to a 2-thread downstream scheduler, and its permit is held until it completes. Resilience4j's "
                 "bulkhead waits (`maxWaitDuration` 10 s). Subscribed from the benchmark's thread (*caller*) or "
                 "from 2 non-blocking threads (*loop*: `Schedulers.newParallel`, the 1,000 subscriptions handed to "
                 "them as tasks). *Score*: time per request until all 1,000 ended. *In subscribe()*: the time the "
                 "subscribing threads spent inside `subscribe()`, per request; *of their time*: that over the "
                 "subscribing threads' wall time (1 thread for caller, 2 for loop); *failed*: requests that ended in "
                 "an error.")
        w.append("")
        w.append("| subscribed from | limiter | score | error (99.9%) | unit | B/op | in subscribe() per request | "
                 "of their time | failed | time ÷ Resilience4j |")
        w.append("|---|---|---:|---:|---|---:|---:|---:|---:|---:|")
        for frm, threads in (("caller", 1), ("loop", 2)):
            by = {r["params"].get("limiter"): r for r in waiting if r["params"].get("subscribeFrom") == frm}
            for key, label in STACKS_REACTOR:
                r = by.get(key)
                if not r:
                    continue
                sub = secondary(r, "subscribeNanos")
                req = secondary(r, "requests")
                failed = secondary(r, "failed")
                per = sub / req if req and not math.isnan(req) else float("nan")
                share = per / (r["score"] * threads) if r["score"] else float("nan")
                rr, re_ = ratio_with_error(r, by["resilience4j"]) if "resilience4j" in by else (float("nan"),) * 2
                w.append(f"| {frm} | {label.split(' (')[0]} | {fmt(r['score'])} | {fmt(r['error'], r['score'])} | "
                         f"{r['unit']} | {b_op(r)} | {fmt(per)} ns | {share:.0%} | "
                         f"{0 if math.isnan(failed) else int(round(failed))} | {pm(rr, re_)} |")
            if "sema" in by and "resilience4j" in by:
                rr, re_ = ratio_with_error(by["sema"], by["resilience4j"])
                targets.append(("16b", f"Reactor, 1,000 on 16, subscribed from {frm}: Sema's time ÷ Resilience4j's "
                                "(reported; no target)", pm(rr, re_), "-"))
        w.append("")

    # 16c
    w.append("### 16c. Kotlin coroutines: `withPermit`")
    w.append("")
    if not krows:
        w += ["Not run.", ""]
    else:
        by = {r["method"]: r for r in krows}
        w.append(jmh_settings(krows) + ". Sema's `withPermit` (sema-kotlin, an extension of `dev.sema.Semaphore`) "
                 "against `kotlinx.coroutines.sync.Semaphore.withPermit`, both with 64 permits. *Uncontended*: one "
                 "coroutine, 1,000 calls in a row in one `runBlocking`; *contended*: 10,000 coroutines on "
                 "`Dispatchers.Default` (2 threads here), each holding its permit across a `yield()`. Scores are per "
                 "`withPermit` call. *Throughput ÷ kotlinx*: kotlinx's time over Sema's, so above 1.00 is faster "
                 "than kotlinx.")
        w.append("")
        w.append("| case | semaphore | score | error (99.9%) | unit | B/op | throughput ÷ kotlinx |")
        w.append("|---|---|---:|---:|---|---:|---:|")
        for case, sema_m, kx_m in (("uncontended", "uncontendedSema", "uncontendedKotlinx"),
                                   ("10,000 coroutines on 64", "contendedSema", "contendedKotlinx")):
            if sema_m not in by or kx_m not in by:
                continue
            rr, re_ = ratio_with_error(by[kx_m], by[sema_m])
            for m, label in ((sema_m, "Sema"), (kx_m, "kotlinx")):
                r = by[m]
                ratio = pm(rr, re_) if m == sema_m else "1.00"
                w.append(f"| {case} | {label} | {fmt(r['score'])} | {fmt(r['error'], r['score'])} | {r['unit']} | "
                         f"{b_op(r)} | {ratio} |")
            targets.append(("16c", f"Kotlin, {case}: Sema's throughput ÷ kotlinx's ≥ 0.80", pm(rr, re_),
                            verdict(rr, re_, 0.8, at_most=False)))
        w.append("")

    # 16d
    w.append("### 16d. gRPC: a unary call through a server interceptor, in process")
    w.append("")
    grpc_rows = [r for r in rows if r["cls"] == "GrpcBenchmark"]
    if not grpc_rows:
        w += ["Not run.", ""]
    else:
        w.append(jmh_settings(grpc_rows) + ". *A unary call*: one thread makes blocking unary calls of 8 bytes over "
                 "grpc's in-process transport, `directExecutor()` on server and channel, so the whole call, the "
                 "interceptor included, runs on that thread; the limit (64) is never reached. *The interceptor alone*: "
                 "the server side of one unary call as the transport drives it (`interceptCall`, the listener's "
                 "`onMessage` and `onHalfClose`, on which the service replies and closes the call, and `onComplete`) "
                 "on a stub call, without the transport, so that the interceptor's own work is not lost in the "
                 "call's. *Added*: the time beyond the baseline's.")
        w.append("")
        w.append("| measured | interceptor | score | error (99.9%) | unit | B/op | added | time ÷ Netflix |")
        w.append("|---|---|---:|---:|---|---:|---:|---:|")
        for method, what in (("unaryCall", "a unary call"), ("interceptorAlone", "the interceptor alone")):
            grpc = {r["params"].get("interceptor"): r for r in grpc_rows if r["method"] == method}
            for key, label in STACKS_GRPC:
                r = grpc.get(key)
                if not r:
                    continue
                added = fmt(r["score"] - grpc["none"]["score"]) if "none" in grpc and key != "none" else "-"
                rr, re_ = ratio_with_error(r, grpc["netflix"]) if "netflix" in grpc else (float("nan"),) * 2
                w.append(f"| {what} | {label} | {fmt(r['score'])} | {fmt(r['error'], r['score'])} | {r['unit']} | "
                         f"{b_op(r)} | {added} | {pm(rr, re_)} |")
            if "sema" in grpc and "netflix" in grpc:
                rr, re_ = ratio_with_error(grpc["sema"], grpc["netflix"])
                targets.append(("16d", f"gRPC, {what}: Sema's time ÷ Netflix's ≤ 1.00", pm(rr, re_),
                                verdict(rr, re_, 1.0)))
        w.append("")

    w.append("### Targets (16a-16d)")
    w.append("")
    w.append("| # | target | measured | met |")
    w.append("|---|---|---|---|")
    for num, text, measured, met in targets:
        w.append(f"| {num} | {text} | {measured} | {met} |")
    w.append("")
    analysis = read_text(args.stacks_analysis) if args.stacks_analysis else ""
    if analysis:
        w += [analysis.rstrip(), ""]
    return w


def adaptive_section(args, date):
    w = [ADAPTIVE_HEADING, ""]
    w.append("Generated by `bin/benchmarks adaptive` (`dev.sema.bench.adaptive.AdaptiveSimulation`, whose Javadoc "
             "gives the model)" + (f" on {date}" if date else "") + (f", {args.machine}" if args.machine else "")
             + ". A simulated downstream serves its capacity's worth of calls at once in 20 ms (0.8x-1.2x); the rest "
             "queue there, callers give up after 50 ms, and the downstream still spends its time on the calls "
             "it was given, abandoned or not. Requests arrive open-loop above every capacity; each limiter "
             "refuses at once beyond its limit. All contenders ran one after the other in one JVM, in real "
             "time. *Goodput* is successful calls per second (*of servable*: against what the downstream could "
             "serve); *refused* are refused by the limiter, *failed* timed out or were refused downstream; "
             "latencies are of admitted calls; *limit at C* is the mean limit over the second half of the "
             "phase with capacity C; *settle* is how long after the change the limit (its mean over the last second) "
             "took to enter 0.75x-1.5x the capacity for good (\"never\" if it did not).")
    w.append("")
    return w + spliced(args.splice_adaptive, args.adaptive_analysis)


def nz(x):
    return 0.0 if x is None or math.isnan(x) else x


def spring_section(args, date):
    """Section 13 from the JMH results of SpringOverheadBenchmark (sema-spring-example)."""
    mode = args.mode if args.mode in ("full", "quick", "smoke") else ""
    data, rows = load(args.splice_spring)
    first = data[0] if data else {}
    w = [SPRING_HEADING, ""]
    w.append(f"Generated by `bin/benchmarks spring{' ' + mode if mode else ''}` "
             "(`dev.sema.bench.spring.SpringOverheadBenchmark` in sema-spring-example's tests, whose Javadoc gives the "
             "method)" + (f" on {date}" if date else "") + (f", {args.machine}" if args.machine else "") + ". "
             "The example application of the README's Spring Boot section, with its own `application.yml` (meters "
             "bound, waits and holds as Prometheus histograms, an adaptive limit on `inbound`), plus one endpoint, "
             "`/api/bench/...`, whose handler returns a small JSON object from a bean. Four applications, identical "
             "but for what guards that request: *none*; the *`sema.web` filter* (one permit of `inbound`); "
             "*`@WithPermits`* on the bean's method (a permit of `reports`, `timeout = \"100ms\"`, as "
             "`ReportService.render`); *both*. Each is checked first: a request finds the semaphore it should hold "
             "exhausted and is refused 503. One thread sends the requests one after the other, so every permit is "
             "free: this is the cost of the parts on the path every request takes, not of waiting for a permit. "
             "*In process*: Spring MVC through the application's servlet filters in Spring Boot's order (MockMvc), "
             "all of a request but Tomcat and the network; *over loopback HTTP*: the same request to the "
             "application's Tomcat with `java.net.http` (HTTP/1.1, one kept-alive connection), client and server "
             "in one JVM, for the scale of a whole request. JMH runs each application in forks of its own with the "
             "same JVM settings; compare within this section only.")
    w.append("")
    if mode in ("quick", "smoke"):
        w.append(f"**A {mode} run**: fewer forks and iterations than `bin/benchmarks spring full`; indicative "
                 "numbers.")
        w.append("")
    if first:
        seen = []
        for r in data:
            cls, method = class_and_method(r["benchmark"])
            text = (f"{r.get('forks', '?')} fork(s), {r.get('warmupIterations', '?')} × {r.get('warmupTime', '?')} "
                    f"warm-up, {r.get('measurementIterations', '?')} × {r.get('measurementTime', '?')} measured")
            entry = f"`{cls}.{method}` {text}"
            if entry not in seen:
                seen.append(entry)
        w.append(f"JMH {first.get('jmhVersion', '?')}, {first.get('vmName', '?')} {first.get('vmVersion', '?')}, "
                 "-prof gc" + (f", JVM arguments `{' '.join(first.get('jvmArgs', []))}`" if first.get("jvmArgs") else "")
                 + "; " + "; ".join(seen)
                 + (f". Machine load average (1 min) before / after: {args.spring_load}" if args.spring_load else "")
                 + ".")
        w.append("")
    parts = {r["method"]: r for r in rows if r["cls"] == "SpringPartsBenchmark"}
    by = {(r["method"], r["params"].get("parts")): r for r in rows if r["cls"] == "SpringOverheadBenchmark"}
    if not by and not parts:
        w.append("No results: the run failed; see sema-spring-example/target/results/spring.log.")
        w.append("")
        return w
    if parts:
        w.append("### The parts alone")
        w.append("")
        w.append("`SpringPartsBenchmark`, in the example application with the filter on: the filter around a filter "
                 "chain that does nothing, against that chain called directly; the `@WithPermits` method through its "
                 "proxy, against the same work from a plain bean.")
        w.append("")
        w.append("| part | with it | without it | added per call | B/op added |")
        w.append("|---|---:|---:|---:|---:|")
        for label, on, off in (("`sema.web` filter: path match, a permit of `inbound` taken and given back, its "
                                "meters and adaptive limit", "filtered", "unfiltered"),
                               ("`@WithPermits`: the proxy, a permit of `reports` held around the call, its meters",
                                "guarded", "plain")):
            a, b = parts.get(on), parts.get(off)
            if a is None or b is None:
                continue
            unit = "ns" if a["unit"] == "ns/op" else a["unit"]
            d = a["score"] - b["score"]
            e = math.sqrt(nz(a["error"]) ** 2 + nz(b["error"]) ** 2)
            alloc = (f"{a['alloc'] - b['alloc']:+,.0f}" if not math.isnan(a["alloc"]) and not math.isnan(b["alloc"])
                     else "n/a")
            w.append(f"| {label} | {fmt(a['score'])} ± {fmt(a['error'], a['score'])} {unit} | "
                     f"{fmt(b['score'])} ± {fmt(b['error'], b['score'])} {unit} | {fmt(d)} ± {fmt(e, d)} {unit} | "
                     f"{alloc} |")
        w.append("")
    if not by:
        return w
    w.append("### In a request")
    w.append("")
    w.append("`SpringOverheadBenchmark`: the four applications.")
    w.append("")
    w.append("| request | guarded by | time per request | error | added to *none* | B/op | B/op added |")
    w.append("|---|---|---:|---:|---:|---:|---:|")
    for method, way in SPRING_WAYS:
        base = by.get((method, "none"))
        for part, label in SPRING_PARTS:
            r = by.get((method, part))
            if r is None:
                continue
            unit = "µs" if r["unit"] == "us/op" else r["unit"]
            added = "—"
            added_alloc = "—"
            if base is not None and part != "none":
                d = r["score"] - base["score"]
                e = math.sqrt(nz(r["error"]) ** 2 + nz(base["error"]) ** 2)
                pct = 100 * d / base["score"] if base["score"] else float("nan")
                added = f"{d:+,.2f} ± {e:,.2f} {unit} ({pct:+.1f}%)"
                if not math.isnan(r["alloc"]) and not math.isnan(base["alloc"]):
                    added_alloc = f"{r['alloc'] - base['alloc']:+,.0f}"
            w.append(f"| {way} | {label} | {fmt(r['score'])} {unit} | ± {fmt(r['error'], r['score'])} | {added} | "
                     f"{fmt(r['alloc']) if not math.isnan(r['alloc']) else 'n/a'} | {added_alloc} |")
    w.append("")
    w.append("*Added*: the difference of the means, ± the two errors combined in quadrature (an approximation of "
             "the difference's 99.9% interval); where it crosses 0 the difference is not resolved. *B/op*: "
             "`gc.alloc.rate.norm`.")
    w.append("")
    analysis = read_text(args.spring_analysis) if args.spring_analysis else ""
    if analysis:
        w += [analysis.rstrip(), ""]
    return w


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--results", help="JMH JSON result file (-rf json); without it the JMH sections say not run")
    p.add_argument("--footprint", help="WaiterFootprint output (Markdown)")
    p.add_argument("--redis", help="RedisComparison output (JSON)")
    p.add_argument("--redis-skipped", default="", help="why the Redis comparison did not run")
    p.add_argument("--redis-only", action="store_true", help="write only the Redis section")
    p.add_argument("--analysis", help="hand-written Markdown on the missed targets, placed after the Targets table")
    p.add_argument("--mode", default="?")
    p.add_argument("--jmh-args", default="")
    p.add_argument("--date", default="")
    p.add_argument("--machine", default="")
    p.add_argument("--keep-adaptive", help="a previous BENCHMARKS.md whose separately generated sections (10, 11: "
                   "adaptive limits; 12: the fleet run; 13: Spring Boot; 14: partitions; 15: keyed; 16: the non-blocking stacks) "
                   "are carried over")
    p.add_argument("--splice-adaptive", help="AdaptiveSimulation output (Markdown): print the document given by "
                   "--into with its section 10 replaced by this run, and nothing else")
    p.add_argument("--adaptive-analysis", help="hand-written Markdown placed after the simulation's table")
    p.add_argument("--splice-fleet", help="AdaptiveFleetSimulation output (Markdown): as --splice-adaptive, for "
                   "section 11")
    p.add_argument("--fleet-analysis", help="hand-written Markdown placed after the fleet simulation's table")
    p.add_argument("--splice-fleetrun", help="FleetRun output (Markdown): as --splice-adaptive, for section 12")
    p.add_argument("--fleetrun-analysis", help="hand-written Markdown placed after the fleet run's tables")
    p.add_argument("--splice-spring", help="SpringOverheadBenchmark's JMH results (JSON): as --splice-adaptive, for "
                   "section 13")
    p.add_argument("--spring-analysis", help="hand-written Markdown placed after section 13's table")
    p.add_argument("--spring-load", default="", help="the machine's load average before / after the Spring run")
    p.add_argument("--splice-partitions", help="PartitionSimulation output (Markdown): as --splice-adaptive, for "
                   "section 14")
    p.add_argument("--partitions-analysis", help="hand-written Markdown placed after the partition simulation's tables")
    p.add_argument("--splice-keyed", help="KeyedFlood output (Markdown): as --splice-adaptive, for section 15, with "
                   "--keyed-jmh")
    p.add_argument("--keyed-jmh", help="KeyedBenchmark's JMH results (JSON), for section 15")
    p.add_argument("--keyed-load", default="", help="the machine's load average before / after the keyed JMH run")
    p.add_argument("--keyed-analysis", help="hand-written Markdown placed after section 15's tables")
    p.add_argument("--splice-stacks", help="the stacks' JMH results (JSON: Reactor and gRPC): as --splice-adaptive, for "
                   "section 16, with --stacks-kotlin")
    p.add_argument("--stacks-kotlin", help="WithPermitBenchmark's JMH results (JSON), for section 16")
    p.add_argument("--stacks-load", default="", help="the machine's load average before / after the stacks' JMH runs")
    p.add_argument("--stacks-analysis", help="hand-written Markdown placed after section 16's tables")
    p.add_argument("--into", help="the BENCHMARKS.md to splice into (with --splice-adaptive, --splice-fleet, "
                   "--splice-fleetrun, --splice-spring, --splice-partitions, --splice-keyed or --splice-stacks)")
    args = p.parse_args()

    if args.splice_adaptive:
        doc = read_text(args.into)
        sys.stdout.write(replace_section(doc, ADAPTIVE_HEADING, "\n".join(adaptive_section(args, args.date))))
        return
    if args.splice_fleet:
        doc = read_text(args.into)
        sys.stdout.write(replace_section(doc, FLEET_HEADING, "\n".join(fleet_section(args, args.date))))
        return
    if args.splice_fleetrun:
        doc = read_text(args.into)
        sys.stdout.write(replace_section(doc, FLEETRUN_HEADING, "\n".join(fleetrun_section(args, args.date))))
        return
    if args.splice_spring:
        doc = read_text(args.into)
        sys.stdout.write(replace_section(doc, SPRING_HEADING, "\n".join(spring_section(args, args.date))))
        return
    if args.splice_partitions:
        doc = read_text(args.into)
        sys.stdout.write(replace_section(doc, PARTITIONS_HEADING, "\n".join(partitions_section(args, args.date))))
        return
    if args.splice_keyed:
        doc = read_text(args.into)
        sys.stdout.write(replace_section(doc, KEYED_HEADING, "\n".join(keyed_section(args, args.date))))
        return
    if args.splice_stacks:
        doc = read_text(args.into)
        sys.stdout.write(replace_section(doc, STACKS_HEADING, "\n".join(stacks_section(args, args.date))))
        return

    data, rows = load(args.results) if args.results else ([], [])
    redis_doc = None
    if args.redis:
        with open(args.redis, encoding="utf-8") as f:
            redis_doc = json.load(f)
    if args.redis_only:
        sys.stdout.write("\n".join(redis_section(redis_doc, args.redis_skipped)))
        return
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
    for num, where, text, met in redis_targets(redis_doc):
        w.append(f"| {num} | {where} | {text} | {met} |")
    w.append("")
    if args.analysis:
        with open(args.analysis, encoding="utf-8") as f:
            w.append(f.read().rstrip())
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
    w += redis_section(redis_doc, args.redis_skipped)
    previous = read_text(args.keep_adaptive) if args.keep_adaptive else ""
    for heading, command in ((ADAPTIVE_HEADING, "adaptive"), (FLEET_HEADING, "adaptive-fleet"),
                             (FLEETRUN_HEADING, "fleet"), (SPRING_HEADING, "spring"),
                             (PARTITIONS_HEADING, "partitions"), (KEYED_HEADING, "keyed"),
                             (STACKS_HEADING, "stacks")):
        kept = extract_section(previous, heading)
        # One blank line between sections however often they were kept (no blank line gathers per run).
        w.append(kept.rstrip("\n") + "\n" if kept else heading + f"\n\nNot run: `bin/benchmarks {command}` runs it.\n")
    sys.stdout.write("\n".join(w))


if __name__ == "__main__":
    main()
