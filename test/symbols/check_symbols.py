#!/usr/bin/env python3
"""The zero-overhead check on object code (docs/benchmarks.md, "Zero overhead beyond timings").

    check_symbols.py --lean lean.o --raw raw.o --allowed allowed.txt [--readelf R] [--cxxfilt C]

Both objects are compiled with -O2 -ffunction-sections. Starting from the two functions each one
defines (capture_and_replay and replay_only), the script follows relocations from section to
section (code, vtables, typeinfo) and collects every undefined symbol the code can reach: the
functions it may call outside the object. Then:

1. what graphcap's all-off version reaches must be reached by the hand-written one too, except
   the names listed in allowed.txt (each justified there);
2. graphcap's replay hot path (replay_only, not entering .text.unlikely sections: the cold error
   path) may reach only what the hand-written replay reaches;
3. graphcap's version reaches no driver function (cu*), no cudaGetDriverEntryPoint*, no CUPTI,
   no NVTX, no dlopen, and no code of an optional policy (liveness::check, the pools,
   annotations) or of capture diagnostics;
4. the globals of graphcap's it reaches are listed under [data] in allowed.txt, and its replay
   hot path reads none.

Unreachable extras (weak functions a header defines, e.g. NVTX's initialisation) are listed as
information: they cost object size, not calls. Exit status 0 when the checks pass, 1 otherwise.
"""

import argparse
import re
import subprocess
import sys

ENTRY_PREFIXES = ("_Z18capture_and_replay", "_Z11replay_only")
FORBIDDEN_NAMES = [
    (re.compile(r"^cu[A-Z]"), "a CUDA driver function"),
    (re.compile(r"^cudaGetDriverEntryPoint"), "the driver entry-point lookup"),
    (re.compile(r"^cupti", re.IGNORECASE), "CUPTI"),
    (re.compile(r"^nvtx", re.IGNORECASE), "NVTX"),
    (re.compile(r"^(dlopen|dlsym|dlclose)$"), "dynamic loading"),
]
FORBIDDEN_GRAPHCAP = [
    # every feature wing's detail namespace, whole
    "graphcap::detail::pool::", "graphcap::detail::liveness::", "graphcap::detail::annotations::",
    "graphcap::detail::control_flow::", "graphcap::detail::families::",
    "graphcap::detail::inspection::", "graphcap::detail::piecewise::",
    "graphcap::detail::rebind::", "graphcap::rebinder",
    # the features' public and shared names
    # (a policy that is an alias of a template, e.g. liveness::check = basic_check<>, by both names)
    "graphcap::liveness::check", "graphcap::liveness::basic_check", "graphcap::detail::slab_pool",
    "graphcap::pool::private_pool", "graphcap::pool::shared", "graphcap::pool::user",
    "graphcap::pool::graph_memory_nodes", "graphcap::pool::basic_graph_memory_nodes",
    "graphcap::annot::on", "graphcap::annot::basic_on", "graphcap::detail::driver",
    "graphcap::detail::cupti",
    "graphcap::detail::nvtx", "graphcap::detail::demangled",
    "graphcap::detail::look_up_driver_function", "graphcap::detail::throw_missing_driver_function",
    "graphcap::capture_diagnostics", "graphcap::basic_capture_diagnostics",
    "graphcap::detail::creation_callbacks",
    "graphcap::detail::explain", "graphcap::detail::diagnostics",
    "graphcap::piecewise_graph", "graphcap::piecewise_scope", "graphcap::island_error",
]


def run(command):
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout


class ObjectFile:
    def __init__(self, path, readelf):
        self.path = path
        self.defined_in = {}  # symbol -> section name
        self.undefined = set()
        self.section_symbols = set()
        self.objects = set()  # defined data symbols (global variables, statics)
        self.relocations = {}  # section name -> referenced symbol names
        for line in run([readelf, "-sW", path]).splitlines():
            match = re.match(r"\s*\d+:\s+[0-9a-f]+\s+\d+\s+(\w+)\s+(\w+)\s+\w+\s+(\S+)\s*(\S*)",
                             line)
            if not match:
                continue
            kind, _bind, index, name = match.groups()
            if not name:
                continue
            if kind == "SECTION":
                self.section_symbols.add(name)
            elif index == "UND":
                self.undefined.add(name)
            elif index.isdigit():
                self.defined_in.setdefault(name, None)
                self.defined_in[name] = int(index)
                if kind in ("OBJECT", "TLS"):
                    self.objects.add(name)
        sections = {}
        for line in run([readelf, "-SW", path]).splitlines():
            match = re.match(r"\s*\[\s*(\d+)\]\s+(\S+)", line)
            if match:
                sections[int(match.group(1))] = match.group(2)
        self.defined_in = {name: sections.get(index) for name, index in self.defined_in.items()}
        current = None
        for line in run([readelf, "-rW", path]).splitlines():
            header = re.match(r"Relocation section '\.rela?(\S+)'", line)
            if header:
                current = header.group(1)
                self.relocations.setdefault(current, set())
                continue
            entry = re.match(r"[0-9a-f]+\s+[0-9a-f]+\s+\S+\s+[0-9a-f]+\s+(\S+)", line)
            if entry and current is not None:
                self.relocations[current].add(entry.group(1))

    def entries(self):
        return sorted(n for n in self.defined_in
                      if n.startswith(ENTRY_PREFIXES) and "." not in n)  # not the .cold parts

    def indirect_calls(self, sections, objdump):
        """How many indirect calls (through a function pointer) the given sections contain: a
        call no symbol names, e.g. a driver function fetched at run time."""
        count = 0
        current = None
        for line in run([objdump, "-d", "--no-show-raw-insn", self.path]).splitlines():
            header = re.match(r"Disassembly of section (\S+):", line)
            if header:
                current = header.group(1)
            elif current in sections and re.search(r"\bcall[a-z]*\s+\*", line):
                count += 1
        return count

    def walk(self, roots, hot_only=False):
        """The sections reachable from `roots` and the undefined symbols they reference; with
        hot_only, cold sections (.text.unlikely*) are not entered."""
        pending = [self.defined_in[r] for r in roots if self.defined_in.get(r)]
        seen = set()
        found = set()
        while pending:
            section = pending.pop()
            if section in seen or (hot_only and section.startswith(".text.unlikely")):
                continue
            seen.add(section)
            for name in self.relocations.get(section, ()):
                if name in self.undefined:
                    found.add(name)
                elif name in self.section_symbols:
                    pending.append(name)
                elif self.defined_in.get(name):
                    pending.append(self.defined_in[name])
        return seen, found

    def reachable(self, roots, hot_only=False):
        return self.walk(roots, hot_only)[1]


def demangle(names, cxxfilt):
    names = sorted(names)
    if not names:
        return {}
    output = subprocess.run([cxxfilt], input="\n".join(names), check=True, capture_output=True,
                            text=True).stdout.splitlines()
    return dict(zip(names, output))


def read_allowed(path):
    """{'anywhere': names, 'cold': names} from allowed.txt's two sections."""
    allowed = {"anywhere": set(), "cold": set(), "data": set()}
    section = None
    with open(path) as file:
        for line in file:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if line in ("[anywhere]", "[cold]", "[data]"):
                section = line[1:-1]
            elif section is None:
                raise SystemExit(f"{path}: '{line}' precedes the first [anywhere] or [cold]")
            else:
                allowed[section].add(line)
    return allowed


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lean", required=True)
    parser.add_argument("--raw", required=True)
    parser.add_argument("--allowed", required=True)
    parser.add_argument("--readelf", default="readelf")
    parser.add_argument("--cxxfilt", default="c++filt")
    parser.add_argument("--objdump", default="objdump")
    parser.add_argument("--no-cold-sections", action="store_true",
                        help="the compiler does not put cold functions in .text.unlikely "
                             "sections (clang): [cold] entries are then accepted anywhere")
    parser.add_argument("--expect-failure", metavar="REGEX",
                        help="the control: succeed only if the check fails with a failure "
                             "matching REGEX (proves the check can fail, for the right reason)")
    parser.add_argument("--expect-no-failure", metavar="REGEX",
                        help="with a control: also fail if any failure matches REGEX (what the "
                             "control's policy must not bring, e.g. CUPTI without a free watch)")
    args = parser.parse_args()

    lean = ObjectFile(args.lean, args.readelf)
    raw = ObjectFile(args.raw, args.readelf)
    for obj in (lean, raw):
        if len(obj.entries()) != 2:
            print(f"{obj.path}: expected capture_and_replay and replay_only, found "
                  f"{obj.entries()}")
            return 1
    lean_all = lean.reachable(lean.entries())
    raw_all = raw.reachable(raw.entries())
    names = demangle(lean_all | raw_all | lean.undefined, args.cxxfilt)
    allowed = read_allowed(args.allowed)
    failures = []

    # Compared by demangled name: a complete- and a base-object constructor are one function here.
    raw_calls = {names[n] for n in raw_all}
    extra = {names[n] for n in lean_all} - raw_calls
    extra_outside_cold = {names[n] for n in lean.reachable(lean.entries(), hot_only=True)} - raw_calls
    everything_allowed = allowed["anywhere"] | allowed["cold"]
    for name in sorted(extra - everything_allowed):
        failures.append(f"graphcap's all-off capture and replay may call {name}, which the "
                        "hand-written version never calls (justify it in allowed.txt, or remove "
                        "the call)")
    outside_cold_allowed = everything_allowed if args.no_cold_sections else allowed["anywhere"]
    for name in sorted((extra_outside_cold & everything_allowed) - outside_cold_allowed):
        failures.append(f"{name} is listed under [cold] in allowed.txt but is now reached outside "
                        "cold code")

    lean_replay = [n for n in lean.entries() if n.startswith("_Z11replay_only")]
    raw_replay = [n for n in raw.entries() if n.startswith("_Z11replay_only")]
    hot = lean.reachable(lean_replay, hot_only=True)
    raw_replay_calls = {names[n] for n in raw.reachable(raw_replay)}
    for name in sorted(n for n in hot if names.get(n, n) not in raw_replay_calls):
        failures.append(f"graphcap's replay hot path calls {names.get(name, name)}, which the "
                        "hand-written replay does not")
    hot_indirect = lean.indirect_calls(lean.walk(lean_replay, hot_only=True)[0], args.objdump)
    raw_indirect = raw.indirect_calls(raw.walk(raw_replay)[0], args.objdump)
    if hot_indirect > raw_indirect:
        failures.append(f"graphcap's replay hot path makes {hot_indirect} indirect calls (through "
                        f"function pointers: driver functions?), the hand-written one {raw_indirect}")

    for name in sorted(lean_all):
        readable = names[name]
        for pattern, what in FORBIDDEN_NAMES:
            if pattern.search(name):
                failures.append(f"graphcap's all-off code may call {readable} ({what})")
    reached_sections = lean.walk(lean.entries())[0]
    defined_here = [n for n, section in lean.defined_in.items()
                    if section in reached_sections and n.startswith("_Z")]
    for name, readable in sorted(demangle(defined_here, args.cxxfilt).items()):
        for marker in FORBIDDEN_GRAPHCAP:
            if marker in readable:
                failures.append(f"graphcap's all-off code reaches policy code: {readable}")

    # Globals: graphcap's own variables the all-off code can reach must be justified ([data]),
    # and the replay hot path may read none.
    hot_sections = lean.walk(lean_replay, hot_only=True)[0]
    graphcap_objects = demangle([n for n in lean.objects if lean.defined_in.get(n) in
                                 reached_sections], args.cxxfilt)
    for name, readable in sorted(graphcap_objects.items()):
        if not readable.startswith("graphcap::"):
            continue
        if readable not in allowed["data"]:
            failures.append(f"graphcap's all-off code reaches the global {readable} (justify it "
                            "under [data] in allowed.txt, or remove it)")
        if lean.defined_in.get(name) in hot_sections:
            failures.append(f"graphcap's replay hot path reads the global {readable}")

    print(f"hand-written capture+replay reaches {len(raw_all)} outside functions; graphcap's "
          f"all-off one {len(lean_all)}")
    print("graphcap's replay hot path calls: " +
          ", ".join(sorted(names.get(n, n) for n in hot)) +
          f"; indirect calls: {hot_indirect} (hand-written: {raw_indirect})")
    listed = sorted(extra & everything_allowed)
    if listed:
        print("reached by graphcap only, allowed (see allowed.txt):")
        for name in listed:
            print(f"  {name}")
    unreachable = {names[n] for n in lean.undefined - lean_all - raw.undefined}
    if unreachable:
        print("referenced by graphcap's object but unreachable from the capture and replay "
              "(object size, not calls):")
        for name in sorted(unreachable):
            print(f"  {name}")
    stale = sorted(everything_allowed - extra)
    if stale:
        print("allowed.txt entries no longer needed by this compiler: " + ", ".join(stale))
    if args.expect_failure:
        matching = [f for f in failures if re.search(args.expect_failure, f)]
        print(f"control: {len(failures)} failures, {len(matching)} matching "
              f"'{args.expect_failure}'")
        for failure in matching[:10]:
            print(f"  {failure}")
        unwanted = ([f for f in failures if re.search(args.expect_no_failure, f)]
                    if args.expect_no_failure else [])
        for failure in unwanted[:10]:
            print(f"  unwanted ('{args.expect_no_failure}'): {failure}")
        return 0 if matching and not unwanted else 1
    if failures:
        print("FAILED:")
        for failure in failures:
            print(f"  {failure}")
        return 1
    print("ok: graphcap's all-off capture and replay call nothing a hand-written version does not "
          "(beyond allowed.txt)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
