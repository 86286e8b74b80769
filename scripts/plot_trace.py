#!/usr/bin/env python3
"""Render a graphcap Chrome trace (trace_recorder::write_chrome_trace) to a PNG.

One row per lane (the lanes are named by the kernels' annotations), one bar per kernel, coloured
by kernel name; the lanes keep the order the trace gives them. For docs/annotations.md: the same
trace opens interactively in https://ui.perfetto.dev.

    python3 scripts/plot_trace.py annotations_trace.json annotations_trace.png [--replays N]

--replays N keeps only the first N replays' worth of time (the whole trace by default), so that
the bars stay wide enough to read.
"""

import argparse
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)


def load(path):
    with open(path, encoding="utf-8") as file:
        events = json.load(file)["traceEvents"]
    lanes = {}  # (pid, tid) -> (sort index, name)
    kernels = []
    for event in events:
        key = (event.get("pid", 0), event.get("tid", 0))
        if event.get("ph") == "M" and event.get("name") == "thread_name":
            lanes[key] = (lanes.get(key, (0, ""))[0], event["args"]["name"])
        elif event.get("ph") == "M" and event.get("name") == "thread_sort_index":
            lanes[key] = (event["args"]["sort_index"], lanes.get(key, (0, ""))[1])
        elif event.get("ph") == "X":
            kernels.append(event)
    return lanes, kernels


def short(name):
    """The kernel's name without namespaces, template arguments and parameters."""
    name = name.replace("(anonymous namespace)::", "")  # else split("(") leaves nothing
    name = name.split("(")[0].split("<")[0]
    name = name.split("::")[-1].split(" ")[-1]  # "void step" -> "step"
    return name or "kernel"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("png")
    parser.add_argument("--replays", type=int, default=0,
                        help="show only the first N replays (by the first lane's kernel count)")
    args = parser.parse_args()

    lanes, kernels = load(args.trace)
    if not kernels:
        sys.exit(f"{args.trace}: no kernel in the trace")
    kernels.sort(key=lambda k: k["ts"])
    if args.replays > 0:
        # A replay is one run of every graph kernel: cut after N times the kernels of one replay.
        node_ids = {k["args"].get("graph node id") for k in kernels}
        per_replay = len(node_ids)
        kernels = kernels[: per_replay * args.replays]

    order = sorted({(k["pid"], k["tid"]) for k in kernels}, key=lambda key: lanes.get(key, (0, ""))[0])
    row = {key: i for i, key in enumerate(order)}
    names = sorted({short(k["name"]) for k in kernels})
    palette = plt.get_cmap("tab10")
    colour = {name: palette(i % 10) for i, name in enumerate(names)}

    figure, axes = plt.subplots(figsize=(12, 0.6 * len(order) + 1.6))
    for kernel in kernels:
        y = row[(kernel["pid"], kernel["tid"])]
        axes.barh(y, max(kernel["dur"], 0.05), left=kernel["ts"], height=0.6,
                  color=colour[short(kernel["name"])], edgecolor="black", linewidth=0.3)
    axes.set_yticks(range(len(order)))
    axes.set_yticklabels([lanes.get(key, (0, f"tid {key[1]}"))[1] for key in order])
    axes.invert_yaxis()
    axes.set_xlabel("time since the first kernel (us)")
    axes.set_title(f"{len(kernels)} kernels in lanes named by their annotations")
    if len(names) > 1:  # one kernel name: said in the title, no legend box
        handles = [plt.Rectangle((0, 0), 1, 1, color=colour[name]) for name in names]
        axes.legend(handles, names, loc="upper center",
                    bbox_to_anchor=(0.5, -0.25 if len(order) < 4 else -0.12),
                    ncol=min(len(names), 6), fontsize="small", frameon=False)
    else:
        axes.set_title(f"{len(kernels)} kernels ({names[0]}) in lanes named by their annotations")
    figure.tight_layout()
    figure.savefig(args.png, dpi=120)
    print(f"{args.png}: {len(kernels)} kernels in {len(order)} lanes")


if __name__ == "__main__":
    main()
