#!/usr/bin/env python3
"""What including graphcap costs a .cu translation unit's compile (#32, goal 5), measured on this
machine (no GPU needed): one small kernel and one capture, compiled with nvcc -std=c++20
-arch=sm_90 against the same TU that includes only cuda_runtime.h.

Configurations (each compiled RUNS times, interleaved; the minimum wall time counts):
  cuda_runtime  cuda_runtime.h alone, the kernel launched eagerly (the baseline)
  lean          <graphcap/basic_graph.hpp>, a lean_graph capture
  graphcap      <graphcap/graphcap.hpp>, a graphcap::graph capture
  every leaf    every entry header of include/graphcap (annotations, control flow, families,
                inspection, liveness, piecewise, ...), the same capture
and, for each of the three, its floor: the eager TU with only the headers from outside graphcap
that the configuration's graphcap headers include (the standard library, CUDA's, CUPTI's,
Boost.Hana), none of graphcap's own code. What a ratio has above its floor is graphcap's; the
floor is what its choice of standard headers costs (docs/benchmarks.md, Compile time).

  python3 scripts/compile-time.py             # prints a table and the ratios
  RUNS=5 NVCC=/usr/local/cuda/bin/nvcc python3 scripts/compile-time.py
  python3 scripts/compile-time.py --check benchmark/compile-time.json   # CI's gate
  python3 scripts/compile-time.py --out docs/results/<run>/compile-time.txt   # a stored run

With --out FILE the same lines are also written to FILE, under a header naming the commit (git
rev-parse HEAD, or $GRAPHCAP_COMMIT where the tree has no .git), the command line, the UTC date,
the machine and nvcc's version, followed by every run's seconds: a stored run a reader can trace
(#50). Each configuration's ratio to its floor is printed with #48's goal for it (graphcap.hpp
<= 1.3x its floor, every leaf <= 1.8x, lean <= 1.15x) and whether this run met it.

With --check FILE (what .ci/run does), it fails when a configuration's ratio is more than 20%
over the ratio FILE records for it ({"ratios": {"lean": 2.2, ...}}, measured on the CI machine's
kind and written into docs/benchmarks.md too): the compile time a header change adds is caught
when it lands, not sessions later. Ratios, not seconds: both sides of one ratio are compiled on
the same machine, interleaved, so a slower or busier machine moves them less than the seconds.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NVCC = os.environ.get("NVCC", "/usr/local/cuda/bin/nvcc")
RUNS = int(os.environ.get("RUNS", "3"))

KERNEL = """#include <cuda_runtime.h>
__global__ void scale(float* x, float a, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}
"""
EAGER = """int run(cudaStream_t s, float* x) {
  scale<<<4, 256, 0, s>>>(x, 2.0F, 1024);
  return 0;
}
"""
CAPTURE = """int run(cudaStream_t s, float* x) {
  GRAPH g;
  g.capture(s, [&](cudaStream_t c) { scale<<<4, 256, 0, c>>>(x, 2.0F, 1024); });
  g.replay(s);
  return 0;
}
"""


def entry_headers():
    folder = os.path.join(ROOT, "include", "graphcap")
    names = sorted(n for n in os.listdir(folder) if n.endswith((".hpp", ".cuh")))
    # The deprecated entry headers warn by design (their first line says so); their targets are
    # included under their own names, through the headers that replace them.
    return [n for n in names if "deprecated entry header" not in first_line(os.path.join(folder, n))]


def first_line(path):
    with open(path, encoding="utf-8") as header:
        return header.readline()


INCLUDE = re.compile(r'^\s*#\s*include\s*<([^>]+)>', re.M)


def unconditional_includes(text):
    """The #include <...> targets of `text` outside any #if block (those inside depend on macros
    the measured TUs do not set: NVTX regions, CCCL's experimental resources)."""
    depth, found = 0, []
    for line in text.splitlines():
        directive = line.strip()
        if re.match(r"#\s*if", directive):
            depth += 1
        elif re.match(r"#\s*endif", directive):
            depth -= 1
        elif depth == 0:
            found += INCLUDE.findall(directive)
    return found


def outside_headers(names):
    """The headers from outside graphcap that graphcap's headers `names` reach (transitively
    through graphcap's own), in first-seen order."""
    seen, outside, stack = set(), [], list(reversed(names))
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        with open(os.path.join(ROOT, "include", "graphcap", name), encoding="utf-8") as header:
            found = unconditional_includes(header.read())
        for target in reversed(found):
            if target.startswith("graphcap/"):
                if os.path.exists(os.path.join(ROOT, "include", target)):  # not config.hpp's stop
                    stack.append(target[len("graphcap/"):])
            elif target not in outside:
                outside.append(target)
    return outside


def floor(names):
    return "".join(f"#include <{h}>\n" for h in outside_headers(names)) + KERNEL + EAGER


def sources():
    every_names = entry_headers()
    every = "".join(f"#include <graphcap/{name}>\n" for name in every_names)
    return {
        "cuda_runtime": KERNEL + EAGER,
        "lean": "#include <graphcap/basic_graph.hpp>\n" + KERNEL + "#define GRAPH graphcap::lean_graph\n" + CAPTURE,
        "graphcap": "#include <graphcap/graphcap.hpp>\n" + KERNEL + "#define GRAPH graphcap::graph\n" + CAPTURE,
        "every leaf": every + KERNEL + "#define GRAPH graphcap::graph\n" + CAPTURE,
        "lean floor": floor(["basic_graph.hpp"]),
        "graphcap floor": floor(["graphcap.hpp"]),
        "leaf floor": floor(every_names),
    }


def compile_once(path):
    command = [NVCC, "-std=c++20", "-arch=sm_90", "-I", os.path.join(ROOT, "include"), "-c", path,
               "-o", os.devnull, "-Wno-deprecated-declarations"]
    begin = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True)
    elapsed = time.perf_counter() - begin
    if result.returncode != 0:
        sys.exit(f"compile-time.py: {os.path.basename(path)} did not compile:\n{result.stderr}")
    return elapsed


# #48's goals: a configuration's compile time over its floor's (what graphcap's own code adds).
ABOVE_FLOOR_GOALS = {"lean": ("lean floor", 1.15), "graphcap": ("graphcap floor", 1.3),
                     "every leaf": ("leaf floor", 1.8)}


def commit():
    """The commit measured: git's HEAD, or $GRAPHCAP_COMMIT where the tree has no .git (a copy)."""
    if os.path.exists(os.path.join(ROOT, ".git")):
        result = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True,
                                text=True)
        if result.returncode == 0:
            return result.stdout.strip()
    return os.environ.get("GRAPHCAP_COMMIT", "unknown (no .git and no GRAPHCAP_COMMIT)")


def run_header():
    version = subprocess.run([NVCC, "--version"], capture_output=True, text=True).stdout
    release = next((line.strip() for line in version.splitlines() if "release" in line), "unknown")
    return [f"commit: {commit()}",
            "command: " + " ".join(["scripts/compile-time.py"] + sys.argv[1:]) + f" (RUNS={RUNS})",
            "date: " + time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            f"machine: {os.uname().nodename}, {os.cpu_count()} cores, nvcc {release}", ""]


def parse_arguments(arguments):
    check_file, out_file = None, None
    while arguments:
        if len(arguments) >= 2 and arguments[0] in ("--check", "--out"):
            if arguments[0] == "--check":
                check_file = arguments[1]
            else:
                out_file = arguments[1]
            arguments = arguments[2:]
        else:
            sys.exit("usage: compile-time.py [--check recorded.json] [--out stored.txt]")
    return check_file, out_file


def main():
    check = None
    check_file, out_file = parse_arguments(sys.argv[1:])
    if check_file is not None:
        with open(check_file, encoding="utf-8") as recorded:
            check = json.load(recorded)["ratios"]
    lines = run_header() if out_file is not None else []

    def say(line):
        print(line)
        lines.append(line)
    with tempfile.TemporaryDirectory() as folder:
        paths = {}
        for name, text in sources().items():
            paths[name] = os.path.join(folder, name.replace(" ", "_") + ".cu")
            with open(paths[name], "w", encoding="utf-8") as out:
                out.write(text)
        times = {name: [] for name in paths}
        for _ in range(RUNS):
            for name, path in paths.items():  # interleaved: a load change hits every one alike
                times[name].append(compile_once(path))
    base = min(times["cuda_runtime"])
    say(f"compile time of one .cu TU, nvcc -std=c++20 -arch=sm_90, minimum of {RUNS} runs")
    say(f"{'configuration':<14}{'seconds':>9}{'ratio':>8}")
    over = []
    for name, samples in times.items():
        ratio = min(samples) / base
        line = f"{name:<14}{min(samples):>9.2f}{ratio:>8.2f}"
        if check is not None and name in check:
            limit = check[name] * 1.2
            line += f"   recorded {check[name]:.2f}, limit {limit:.2f}"
            if ratio > limit:
                over.append(name)
                line += "  OVER"
        say(line)
    for name, (floor_name, goal) in ABOVE_FLOOR_GOALS.items():
        above = min(times[name]) / min(times[floor_name])
        say(f"{name} over {floor_name}: {above:.2f}x (goal <= {goal}x: "
            f"{'met' if above <= goal else 'missed'})")
    if out_file is not None:
        say("")
        say("every run's seconds, in run order:")
        for name, samples in times.items():
            say(f"{name:<16}" + " ".join(f"{sample:.3f}" for sample in samples))
        with open(out_file, "w", encoding="utf-8") as stored:
            stored.write("\n".join(lines) + "\n")
    if over:
        sys.exit(f"compile-time.py: {', '.join(over)} compile more than 20% slower, relative to "
                 "cuda_runtime.h alone, than recorded: find the include that grew (g++ -H), or "
                 "record the new figure in the --check file and docs/benchmarks.md with the reason")


if __name__ == "__main__":
    main()
