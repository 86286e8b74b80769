#!/usr/bin/env python3
"""PyTorch's arms of the graphcap benchmark suite (docs/benchmarks.md).

Case 1: the host cost of one CUDAGraph.replay() call for straight-line graphs of 1 to 10000 tiny
kernels (x.add_(1) on a one-element tensor), interleaved with a raw cuGraphLaunch of the very same
executable graph through ctypes, so both arms pay the same Python loop.
Case 6: a step of 200 small kernels (x.add_(1.0) on 1024 floats) x 1000 steps, eager and as a
graph replay, each step synchronized.
Loops: the time per iteration of `for _ in range(n): g.replay()`, n = 2000, for graphs of K = 1, 8,
32 tiny kernels (x.add_(1) on a one-element tensor), device work included: the same work and
measure as bench_loops (benchmark/loops.cu), whose replay_loop arm it is compared with.

Writes bench_pytorch_replay, bench_pytorch_step and bench_pytorch_loops (.csv/.json) into $OUT (or the current
directory), in the same columns as the C++ cases. Exits 0 with a message when torch or a GPU is
missing. BENCH_SCALE scales the repetitions, as for the C++ cases.
"""

import csv
import ctypes
import datetime
import json
import math
import os
import sys
import time


def scaled(repetitions):
    try:
        factor = float(os.environ.get("BENCH_SCALE", "1"))
    except ValueError:
        return repetitions
    if not factor > 0:
        return repetitions
    return max(3, round(repetitions * factor))


def summarize(values):
    """Median (upper middle), p99 (nearest rank), mean, min: as benchmark/harness.hpp."""
    ordered = sorted(values)
    n = len(ordered)
    if n == 0:
        return {"median": 0.0, "p99": 0.0, "mean": 0.0, "min": 0.0, "samples": 0}
    rank = max(1, math.ceil(0.99 * n))
    return {
        "median": ordered[n // 2],
        "p99": ordered[min(n, rank) - 1],
        "mean": sum(ordered) / n,
        "min": ordered[0],
        "samples": n,
    }


def interleave(rounds, warmup, arms):
    """Round r starts with arm r % len(arms); each arm gets whether the round is recorded."""
    for round_index in range(warmup + rounds):
        record = round_index >= warmup
        for i in range(len(arms)):
            arms[(round_index + i) % len(arms)](record)


class Report:
    def __init__(self, name, title, torch):
        self.name = name
        self.title = title
        self.rows = []
        self.notes = []
        self.meta = {
            "case": name,
            "title": title,
            "gpu": torch.cuda.get_device_name(),
            "torch": torch.__version__,
            "torch_cuda": torch.version.cuda,
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        print(f"{name}\n{title} on {self.meta['gpu']} (torch {torch.__version__}, "
              f"CUDA {torch.version.cuda}), {self.meta['date']}")

    def add(self, metric, param, arm, unit, values):
        self.rows.append({"metric": metric, "param": str(param), "arm": arm, "unit": unit,
                          **summarize(values)})

    def note(self, text):
        self.notes.append(text)

    def finish(self, out_dir):
        print(f"{'metric':<34} {'param':>8} {'arm':<34} {'median':>12} {'p99':>12} {'ratio':>8}")
        baselines = {}
        for row in self.rows:
            base = baselines.setdefault((row["metric"], row["param"]), row["median"])
            ratio = row["median"] / base if base > 0 else 0.0
            print(f"{row['metric']:<34} {row['param']:>8} {row['arm']:<34} "
                  f"{row['median']:9.3f} {row['unit']:<2} {row['p99']:9.3f} {row['unit']:<2} "
                  f"{ratio:8.3f}")
        for text in self.notes:
            print(f"note: {text}")
        print("(ratio: median over the first arm of the same metric and param)\n")
        columns = ["case", "metric", "param", "arm", "unit", "median", "p99", "mean", "min",
                   "samples"]
        with open(os.path.join(out_dir, self.name + ".csv"), "w", newline="") as file:
            writer = csv.DictWriter(file, fieldnames=columns)
            writer.writeheader()
            for row in self.rows:
                writer.writerow({"case": self.name, **row})
        with open(os.path.join(out_dir, self.name + ".json"), "w") as file:
            json.dump({**self.meta, "notes": self.notes, "rows": self.rows}, file, indent=2)


def load_driver():
    """The CUDA driver's cuGraphLaunch and cuGraphGetNodes, or None (the raw arm is then skipped)."""
    try:
        driver = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    driver.cuGraphLaunch.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    driver.cuGraphLaunch.restype = ctypes.c_int
    driver.cuGraphGetNodes.argtypes = [ctypes.c_void_p, ctypes.c_void_p,
                                       ctypes.POINTER(ctypes.c_size_t)]
    driver.cuGraphGetNodes.restype = ctypes.c_int
    return driver


def per_call(torch, stream, calls, call):
    """Host time per call in microseconds, the stream drained before and after (not timed)."""
    stream.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        call()
    stop = time.perf_counter()
    stream.synchronize()
    return (stop - start) * 1e6 / calls


def capture(torch, stream, work):
    """A CUDAGraph of `work` (kept template, so its nodes can be counted), after a warm-up."""
    side = torch.cuda.Stream()
    side.wait_stream(stream)
    with torch.cuda.stream(side):
        work()  # warm-up outside the capture, as torch.cuda.graph's documentation asks
    stream.wait_stream(side)
    stream.synchronize()
    try:
        graph = torch.cuda.CUDAGraph(keep_graph=True)
        kept = True
    except TypeError:  # a PyTorch without keep_graph: nodes cannot be counted
        graph = torch.cuda.CUDAGraph()
        kept = False
    with torch.cuda.graph(graph, stream=side):
        work()
    if kept:
        graph.instantiate()  # now, not lazily in the first (timed) replay
    stream.synchronize()
    return graph


def node_count(driver, graph):
    if driver is None:
        return None
    try:
        count = ctypes.c_size_t(0)
        status = driver.cuGraphGetNodes(ctypes.c_void_p(graph.raw_cuda_graph()), None,
                                        ctypes.byref(count))
        return count.value if status == 0 else None
    except (AttributeError, RuntimeError):
        return None


def replay_case(torch, driver, out_dir):
    report = Report("bench_pytorch_replay",
                    "host time per replay call (us), batches of launches", torch)
    stream = torch.cuda.Stream()
    x = torch.zeros(1, device="cuda", dtype=torch.float32)
    with torch.cuda.stream(stream):
        for kernels in (1, 10, 100, 1000, 10000):
            def work(kernels=kernels):
                for _ in range(kernels):
                    x.add_(1)

            graph = capture(torch, stream, work)
            nodes = node_count(driver, graph)
            report.note(f"{kernels} kernels: the PyTorch graph has "
                        f"{nodes if nodes is not None else 'an unknown number of'} nodes")
            raw_launch = None
            if driver is not None and hasattr(graph, "raw_cuda_graph_exec"):
                exec_handle = ctypes.c_void_p(graph.raw_cuda_graph_exec())
                stream_handle = ctypes.c_void_p(stream.cuda_stream)
                launch = driver.cuGraphLaunch

                def raw_launch(launch=launch, exec_handle=exec_handle,
                               stream_handle=stream_handle):
                    if launch(exec_handle, stream_handle) != 0:
                        raise RuntimeError("cuGraphLaunch failed")

            launches = 20 if kernels >= 1000 else 200
            rounds = scaled(15 if kernels >= 10000 else 41)
            torch_times, raw_times = [], []

            def torch_arm(record, graph=graph, launches=launches, samples=torch_times):
                t = per_call(torch, stream, launches, graph.replay)
                if record:
                    samples.append(t)

            def raw_arm(record, launch=raw_launch, launches=launches, samples=raw_times):
                t = per_call(torch, stream, launches, launch)
                if record:
                    samples.append(t)

            interleave(rounds, 3, [raw_arm, torch_arm] if raw_launch else [torch_arm])
            if raw_launch:
                report.add("replay call", kernels, "raw cuGraphLaunch (ctypes)", "us", raw_times)
            report.add("replay call", kernels, "pytorch CUDAGraph.replay()", "us", torch_times)
            del graph
    if driver is None:
        report.note("libcuda.so.1 could not be loaded: no raw arm")
    report.finish(out_dir)


def step_case(torch, out_dir):
    report = Report("bench_pytorch_step",
                    "host time per step (us): 200 small kernels, synchronized", torch)
    stream = torch.cuda.Stream()
    x = torch.zeros(1024, device="cuda", dtype=torch.float32)

    def step():
        for _ in range(200):
            x.add_(1.0)

    with torch.cuda.stream(stream):
        graph = capture(torch, stream, step)
        steps = 1000
        eager_times, graph_times = [], []

        def run_steps(samples, record, one_step):
            stream.synchronize()
            for _ in range(steps):
                start = time.perf_counter()
                one_step()
                stream.synchronize()
                stop = time.perf_counter()
                if record:
                    samples.append((stop - start) * 1e6)

        interleave(scaled(3), 1, [lambda r: run_steps(eager_times, r, step),
                                  lambda r: run_steps(graph_times, r, graph.replay)])
    report.add("step", 200, "pytorch eager", "us", eager_times)
    report.add("step", 200, "pytorch graph replay", "us", graph_times)
    report.finish(out_dir)


def loops_case(torch, out_dir):
    report = Report("bench_pytorch_loops",
                    "time per loop iteration (us), 2000 iterations of a body of K kernels", torch)
    iterations = 2000
    stream = torch.cuda.Stream()
    x = torch.zeros(1, device="cuda", dtype=torch.int32)
    with torch.cuda.stream(stream):
        for kernels in (1, 8, 32):
            def body(kernels=kernels):
                for _ in range(kernels):
                    x.add_(1)

            graph = capture(torch, stream, body)
            times = []

            def loop_arm(record, graph=graph, samples=times):
                # As bench_loops' per_iteration: drained before, timed up to the last one's end.
                stream.synchronize()
                start = time.perf_counter()
                for _ in range(iterations):
                    graph.replay()
                stream.synchronize()
                if record:
                    samples.append((time.perf_counter() - start) * 1e6 / iterations)

            interleave(scaled(21), 2, [loop_arm])
            report.add("loop iteration", kernels, "pytorch for-loop of replay()", "us", times)
            del graph
    report.note("compare with bench_loops' \"replay_loop\" and \"n x replay()\" arms (same "
                "metric and param): the goal is replay_loop >= 3x cheaper at K=1")
    report.finish(out_dir)


def main():
    try:
        import torch
    except ImportError:
        print("pytorch_bench: PyTorch is not installed here; skipped (nothing measured).")
        return 0
    if not torch.cuda.is_available():
        print("pytorch_bench: no CUDA device available to PyTorch; skipped (nothing measured).")
        return 0
    out_dir = os.environ.get("OUT") or "."
    os.makedirs(out_dir, exist_ok=True)
    driver = load_driver()
    replay_case(torch, driver, out_dir)
    step_case(torch, out_dir)
    loops_case(torch, out_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
