#!/usr/bin/env python3
"""The lean core includes nothing an optional feature needs (docs/design.md, "Layout").

    check_lean_includes.py --compiler g++ -- <flags...>

Preprocesses a translation unit that includes only <graphcap/basic_graph.hpp> (what a program
using lean_graph needs) with -H, lists every header it opens, and fails if one of them belongs
to an optional feature: the driver API (<cuda.h>, <cudaTypedefs.h>), the demangler
(<cxxabi.h>), CUPTI, NVTX, Boost (Hana is for graph_with), <charconv>, an unordered
container, <limits> or <span> (#48: standard headers the lean core does not need). Prints the list either way, so that a failure shows which header brought it in.
"""

import argparse
import re
import subprocess
import sys

FORBIDDEN = [
    (re.compile(r"/cuda\.h$"), "the CUDA driver API"),
    (re.compile(r"/cudaTypedefs\.h$"), "the CUDA driver API's typedefs"),
    (re.compile(r"/cxxabi\.h$"), "the demangler"),
    (re.compile(r"/cupti[^/]*\.h$"), "CUPTI"),
    (re.compile(r"/(nvtx3|nvToolsExt)[^/]*"), "NVTX"),
    (re.compile(r"/boost/"), "Boost"),
    (re.compile(r"/charconv$"), "<charconv>"),
    (re.compile(r"/unordered_(map|set)$"), "an unordered container"),
    # #48: a standard header the lean core does not need (PTRDIFF_MAX comes from <cstdint>).
    (re.compile(r"/limits$"), "<limits>"),
    # #48: the core's policy contract names no span since the wings' contract moved out
    # (core/wing_contract.hpp); <span> brings the ranges concepts with it.
    (re.compile(r"/span$"), "<span>"),
]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--compiler", required=True)
    parser.add_argument("--header", default="graphcap/basic_graph.hpp")
    parser.add_argument("--expect-failure", action="store_true",
                        help="the control: succeed only if the check fails")
    parser.add_argument("flags", nargs="*")
    args = parser.parse_args()
    status = check(args)
    if args.expect_failure:
        print("control: " + ("the check failed, as it must" if status else "the check passed"))
        return 0 if status else 1
    return status


def check(args):
    source = f"#include <{args.header}>\ngraphcap::lean_graph graph;\n"
    result = subprocess.run([args.compiler, "-std=c++20", "-E", "-H", *args.flags, "-x", "c++",
                             "-", "-o", "/dev/null"], input=source, capture_output=True, text=True)
    if result.returncode != 0:
        print(result.stderr)
        print("check_lean_includes: the lean translation unit does not preprocess")
        return 1
    headers = []
    for line in result.stderr.splitlines():
        match = re.match(r"^(\.+) (\S+)$", line)
        if match:
            headers.append((len(match.group(1)), match.group(2)))
    failures = []
    for position, (depth, path) in enumerate(headers):
        for pattern, what in FORBIDDEN:
            if pattern.search(path):
                # The header that included it: the nearest shallower one before it.
                parent = next((p for d, p in reversed(headers[:position]) if d < depth), "the TU")
                failures.append(f"{path} ({what}), included by {parent}")
    graphcap = sorted({p for _, p in headers if "/graphcap/" in p})
    print(f"the lean TU opens {len(headers)} headers, {len(graphcap)} of graphcap's:")
    for path in graphcap:
        print("  " + path[path.index("graphcap/"):])
    if failures:
        print("check_lean_includes: the lean core includes what only optional features need:")
        for failure in failures:
            print("  " + failure)
        return 1
    print("ok: no driver API, demangler, CUPTI, NVTX, Boost, <charconv>, unordered container, "
          "<limits> or <span>")
    return 0


if __name__ == "__main__":
    sys.exit(main())
