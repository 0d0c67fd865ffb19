"""The capacity plot for docs/benchmarks.md (target 6): per record, the CDF of the time from a change
to the updated CSIStorageCapacity objects, Topovol and external-provisioner. Reads the records
hack/bench/capacity.sh and hack/bench/capacity-labels.sh write; run through
hack/bench/benchmarks-doc.sh, which provides matplotlib."""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

results, out_dir = sys.argv[1], sys.argv[2]
STYLE = {"topovol": "tab:blue", "upstream": "tab:orange"}
WHO = {"topovol": "Topovol", "upstream": "external-provisioner"}
# (file, list field, kind field, {kind: (line, words)}, panel title)
PANELS = (
    ("capacity-per-node-per-class-latest.json", "changeList", "kind", {"provisioned": ("-", "volume provisioned"), "outside": ("--", "volume made outside")}, "Per node, a pool per class: volume change"),
    ("capacity-per-node-shared-latest.json", "changeList", "kind", {"provisioned": ("-", "volume provisioned"), "outside": ("--", "volume made outside")}, "Per node, one pool per node: volume change"),
    ("capacity-labels-latest.json", "moveList", "op", {"move": ("-", "node moved to a new zone"), "back": ("--", "node moved back")}, "Central: node label change"),
)

panels = []
for file, field, kind_field, kinds, title in PANELS:
    path = os.path.join(results, file)
    if os.path.exists(path):
        with open(path) as f:
            panels.append((json.load(f), field, kind_field, kinds, title))
if not panels:
    sys.exit(0)
fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels), 5.2), squeeze=False, sharey=True)
for ax, (rec, field, kind_field, kinds, title) in zip(axes[0], panels):
    for r in rec["runs"]:
        for kind, (line, words) in kinds.items():
            ms = sorted(c["ms"] for c in r[field] if c[kind_field] == kind and c["ms"] is not None)
            if not ms:
                continue
            xs = [max(v, 1) / 1000 for v in ms]
            ys = [(i + 1) / len(ms) for i in range(len(ms))]
            ax.step(xs, ys, line, where="post", color=STYLE[r["contender"]], label=f"{WHO[r['contender']]}: {words}")
    ax.axvline(2, color="gray", lw=0.8, ls=":")
    ax.set_xscale("log")
    ax.set_title(f"{title}\n({rec['date'][:10]})", fontsize=9)
    ax.set_xlabel("seconds from the change to the objects (dotted: 2 s)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=1, frameon=False)
axes[0][0].set_ylabel("fraction of changes")
fig.text(0.01, 0.01, panels[0][0]["machine"], fontsize=6, color="gray")
fig.tight_layout(rect=(0, 0.03, 1, 1))
fig.savefig(f"{out_dir}/capacity-change-latency.png", dpi=110)
plt.close(fig)
