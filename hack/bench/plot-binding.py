"""Plots for docs/benchmarks.md from hack/bench/results/pv-binder-latest.json (written by
hack/bench/pv-binder.sh). Run through hack/bench/benchmarks-doc.sh, which provides matplotlib."""
import json
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

record_path, out_dir = sys.argv[1], sys.argv[2]
with open(record_path) as f:
    record = json.load(f)
runs = record["runs"]
# With --repeat, the curves against N go through the median of the rounds and the plots of one run
# (progress, latency, memory) show the first round.
first_rounds = [r for r in runs if r.get("round", 1) == 1]


def medians(contender, order, pick):
    """(N, median of pick over the complete rounds) for one contender and order, by N."""
    by_n = {}
    for r in runs:
        if r["contender"] == contender and r["order"] == order and r["complete"]:
            by_n.setdefault(r["n"], []).append(pick(r))
    return [(n, statistics.median(v)) for n, v in sorted(by_n.items())]
STYLE = {"topovol": "tab:blue", "upstream": "tab:orange"}
LINE = {"binder-first": "-", "objects-first": "--"}
FOOT = f"{record['machine']}; {record['date'][:10]}"


def label(r):
    who = "Topovol" if r["contender"] == "topovol" else "kube-controller-manager"
    return f"{who}, {r['order']}"


def finish(fig, ax, name, title):
    ax.set_title(title, fontsize=11)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.text(0.01, 0.01, FOOT, fontsize=6, color="gray")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(f"{out_dir}/{name}", dpi=110)
    plt.close(fig)


# 1. Time to all Bound against N, with what the API server's write ceiling allows.
fig, ax = plt.subplots(figsize=(7, 4.2))
for contender in ("topovol", "upstream"):
    for order in ("binder-first", "objects-first"):
        pts = medians(contender, order, lambda r: r["allBoundSeconds"])
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], LINE[order], marker="o", color=STYLE[contender], label=label({"contender": contender, "order": order}))
ceil = {}
for r in runs:
    ceil.setdefault(r["n"], []).append(r["n"] / r["ceiling"]["bindingsPerSecond"])
if ceil:
    ns = sorted(ceil)
    ax.plot(ns, [statistics.median(ceil[n]) for n in ns], ":", color="gray", label="API server write ceiling (4 writes/binding)")
ax.set_xscale("log")
ax.set_yscale("log")
ax.set_xlabel("pairs (N)")
ax.set_ylabel("seconds to all Bound")
finish(fig, ax, "binding-time-vs-n.png", "Static binding: time to bind N pairs")

# 1b. Fraction of the write ceiling (target 1) and CPU per binding (target 2) against N.
fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.8))
for contender in ("topovol", "upstream"):
    for order in ("binder-first", "objects-first"):
        frac = medians(contender, order, lambda r: 100 * r["fractionOfCeiling"])
        if not frac:
            continue
        cpu = medians(contender, order, lambda r: r["binder"]["cpuMsPerBinding"])
        style = dict(marker="o", color=STYLE[contender], label=label({"contender": contender, "order": order}))
        left.plot([p[0] for p in frac], [p[1] for p in frac], LINE[order], **style)
        right.plot([p[0] for p in cpu], [p[1] for p in cpu], LINE[order], **style)
left.axhline(90, color="gray", lw=0.8, ls=":")
left.set_ylabel("% of the write ceiling (dotted: target 90%)")
left.set_ylim(0, 100)
right.set_ylabel("binder CPU ms per binding")
for ax in (left, right):
    ax.set_xscale("log")
    ax.set_xlabel("pairs (N)")
    ax.grid(True, alpha=0.3)
right.legend(fontsize=7)
left.set_title("Throughput as a fraction of the ceiling", fontsize=10)
right.set_title("CPU per binding", fontsize=10)
fig.text(0.01, 0.01, FOOT, fontsize=6, color="gray")
fig.tight_layout(rect=(0, 0.03, 1, 1))
fig.savefig(f"{out_dir}/binding-ceiling-and-cpu.png", dpi=110)
plt.close(fig)

# 2. Progress over time at the largest N.
nmax = max(r["n"] for r in runs)
fig, ax = plt.subplots(figsize=(7, 4.2))
for r in first_rounds:
    if r["n"] != nmax:
        continue
    t = r["boundTimeline"]
    ax.plot([p[0] for p in t], [p[1] for p in t], LINE[r["order"]], color=STYLE[r["contender"]], label=label(r))
ax.set_xlabel("seconds (binder-first: from the first claim create; objects-first: from binder start)")
ax.set_ylabel("claims Bound")
finish(fig, ax, "binding-progress.png", f"Claims Bound over time, N = {nmax}")

# 3. Latency CDF (binder-first: claim create to Bound) at the largest N.
fig, ax = plt.subplots(figsize=(7, 4.2))
for r in first_rounds:
    if r["n"] == nmax and r.get("latencyCdf"):
        c = r["latencyCdf"]
        ax.plot([p[0] / 1000 for p in c], [p[1] for p in c], color=STYLE[r["contender"]], label=label(r))
ax.set_xlabel("seconds from claim create to Bound")
ax.set_ylabel("fraction of claims")
finish(fig, ax, "binding-latency-cdf.png", f"Claim latency CDF, binder-first, N = {nmax}")

# 4. Resident set over time at the largest N.
fig, ax = plt.subplots(figsize=(7, 4.2))
for r in first_rounds:
    if r["n"] != nmax:
        continue
    s = r["binder"]["rssSeries"]
    ax.plot([p["seconds"] for p in s], [p["rssMiB"] for p in s], LINE[r["order"]], color=STYLE[r["contender"]], label=label(r))
ax.set_xlabel("seconds since the binder started")
ax.set_ylabel("resident set, MiB")
finish(fig, ax, "binding-rss.png", f"Binder memory over its run, N = {nmax}")

# 5. Delayed binding: scheduler pre-bind to Bound, when recorded.
try:
    with open(record_path.replace("pv-binder-latest.json", "delayed-binding-latest.json")) as f:
        delayed = json.load(f)
except FileNotFoundError:
    delayed = None
if delayed:
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for r in delayed["runs"]:
        c = r["preBindToBoundCdf"]
        who = "Topovol" if r["contender"] == "topovol" else "kube-controller-manager"
        ax.plot([p[0] for p in c], [p[1] for p in c], color=STYLE[r["contender"]], label=f"{who}, {r['claims']} claims")
    ax.set_xscale("symlog", linthresh=10)
    ax.set_xlabel("milliseconds from kube-scheduler's pre-bind to Bound")
    ax.set_ylabel("fraction of claims")
    finish(fig, ax, "delayed-binding-cdf.png", "Delayed binding behind kube-scheduler: pre-bind to Bound")


# 6. Crash and restart, and leader failover: claims Bound over time, each SIGKILL marked.
def sibling(name):
    try:
        with open(record_path.replace("pv-binder-latest.json", name)) as f:
            return json.load(f)
    except FileNotFoundError:
        return None


panels = []
for name, marks, title in (
    ("restart-latest.json", "restartsAtSeconds", "Crash and restart: SIGKILL and restart every {k} s (dotted)"),
    ("failover-latest.json", "killsAtSeconds", "Leader failover: leader SIGKILLed every {k} s (dotted)"),
):
    rec = sibling(name)
    if rec and all("boundTimeline" in r for r in rec["runs"]):
        panels.append((rec, marks, title.format(k=rec["runs"][0]["killEverySeconds"])))
if panels:
    fig, axes = plt.subplots(len(panels), 1, figsize=(7, 3.3 * len(panels)), squeeze=False)
    for ax, (rec, marks, title) in zip(axes[:, 0], panels):
        for r in rec["runs"]:
            who = "Topovol" if r["contender"] == "topovol" else "kube-controller-manager"
            t = r["boundTimeline"]
            ax.plot([p[0] for p in t], [p[1] for p in t], color=STYLE[r["contender"]], label=f"{who}, N = {r['n']}")
            for k in r.get(marks, []):
                ax.axvline(k, color=STYLE[r["contender"]], alpha=0.5, lw=0.8, ls=":")
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("seconds from the first claim create")
        ax.set_ylabel("claims Bound")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.text(0.01, 0.005, f"{panels[0][0]['machine']}; {panels[0][0]['date'][:10]}", fontsize=6, color="gray")
    fig.tight_layout(rect=(0, 0.02, 1, 1))
    fig.savefig(f"{out_dir}/restart-failover.png", dpi=110)
    plt.close(fig)
