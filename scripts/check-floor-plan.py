#!/usr/bin/env python3
"""The floor plan of include/graphcap, checked (docs/design.md, "The floor plan").

Fails when
  - a header includes a graphcap header its folder may not include (FOLDER_RULES, which
    docs/design.md states in words: the two must agree, and this script checks that too);
  - a header includes another feature wing's detail/;
  - a detail file declares a public name (anything in namespace graphcap outside
    graphcap::detail);
  - an entry header (a root forward) declares anything: entry headers only include;
  - a wing's detail file declares something outside graphcap::detail::<wing> (the core's and
    the CUDA layer's detail files use graphcap::detail itself);
  - code in a detail namespace names a policy namespace as `pool::` or `liveness::`: there
    those words are the wings' detail namespaces once a wing header was included before, so
    the policies are spelled `graphcap::pool::off`, `graphcap::liveness::check`.

  python3 scripts/check-floor-plan.py            # from the repository root
"""
import os
import re
import sys

ROOT = "include/graphcap"
# The base files at the root: every folder may include them.
BASE = {"config.hpp", "fwd.hpp", "error.hpp", "version.hpp"}
WINGS = [
    "pool", "liveness", "annotations", "control_flow", "families", "inspection", "piecewise",
    "rebind"
]
# Which folders' headers a folder may include (besides BASE and itself). core/ and cuda/ are
# shared: detail/ of those two may be included by the wings; a wing's own detail/ by no other.
FOLDER_RULES = {
    "cuda": [],
    "core": ["cuda"],
    "pool": ["cuda", "core"],
    "liveness": ["cuda", "core"],
    "annotations": ["cuda", "core"],
    "control_flow": ["cuda", "core"],
    "families": ["cuda", "core", "pool", "inspection"],
    "inspection": ["cuda", "core", "pool"],
    "piecewise": ["cuda", "core", "pool"],
    "rebind": ["cuda", "core"],
}
SHARED_DETAIL = {"cuda", "core"}

INCLUDE = re.compile(r'^\s*#\s*include\s*<graphcap/([^>]+)>', re.M)


def folder_of(rel):
    """The wing of a header path relative to include/graphcap: its first folder, or '' at the
    root (the base files and the entry headers, policies/ and detail/ forwards included)."""
    first = rel.split("/")[0]
    return first if first in FOLDER_RULES else ""


def strip_code(text):
    """The text without comments, string and character literals, and preprocessor lines."""
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r'R"\((.*?)\)"', '""', text, flags=re.S)
    text = re.sub(r'"(\\.|[^"\\])*"', '""', text)
    text = re.sub(r"'(\\.|[^'\\])*'", "''", text)
    text = re.sub(r"^\s*#[^\n]*(\\\n[^\n]*)*", "", text, flags=re.M)
    return text


def public_declarations(text):
    """Code at namespace scope of graphcap (or graphcap::x, x not detail) outside detail."""
    code = strip_code(text)
    found = []
    stack = []  # one entry per open brace: the namespace's name, or None for any other block
    pending = ""
    i = 0
    while i < len(code):
        c = code[i]
        if c == "{":
            m = re.search(r"namespace\s+([\w:]*)\s*$", pending)
            stack.append(m.group(1) if m else None)
            if not m and in_public_namespace(stack[:-1]) and pending.strip():
                found.append(pending.strip().split("\n")[-1][:80])
            pending = ""
        elif c == "}":
            if stack:
                stack.pop()
            pending = ""
        elif c == ";":
            if in_public_namespace(stack) and pending.strip():
                found.append(pending.strip().split("\n")[-1][:80])
            pending = ""
        else:
            pending += c
        i += 1
    return found


POLICY_SPELLING = re.compile(
    r"(?<![\w:])(pool|liveness)::(off|none|private_pool|shared|user|graph_memory_nodes|check)\b")


def namespace_problems(text, wing, is_detail):
    """Where a wing's detail file declares outside its namespace, and where detail code
    spells a policy namespace in the way a wing's detail namespace would capture."""
    code = strip_code(text)
    problems = []
    stack = []
    pending = ""
    for i, c in enumerate(code):
        if c == "{":
            m = re.search(r"namespace\s+([\w:]*)\s*$", pending)
            stack.append(m.group(1) if m else None)
            if m and is_detail and wing in WINGS:
                names = "::".join(s for s in stack if s).split("::")
                if names[:2] == ["graphcap", "detail"] and names[2:3] != [wing]:
                    problems.append(f"a {wing}/ detail file opens namespace {'::'.join(names)}, "
                                    f"not graphcap::detail::{wing}")
            pending = ""
        elif c in "};":
            if c == "}" and stack:
                stack.pop()
            pending = ""
        else:
            pending += c
            names = "::".join(s for s in stack if s).split("::")
            if "detail" in names and c == ":" and code[i - 1] == ":":
                word = re.search(r"\w*$", code[:i - 1]).group(0)
                m = POLICY_SPELLING.match(code, i - 1 - len(word))
                if m:
                    problems.append(f"detail code spells {m.group(0)}: write graphcap::{m.group(0)}")
    return problems


def in_public_namespace(stack):
    """True inside namespace graphcap (or a nested namespace other than detail), directly."""
    if not stack or any(s is None for s in stack):
        return False
    names = "::".join(stack).split("::")
    return names[0] == "graphcap" and "detail" not in names


WING_DETAIL_NAME = re.compile(r"\bdetail::(" + "|".join(WINGS) + r")\b")
WING_NAMESPACE = re.compile(r"\bnamespace\s+(" + "|".join(WINGS) + r")\s*\{")


def wing_name_problems(text):
    """The core and the CUDA layer name no wing's detail namespace (detail::control_flow::...,
    detail::rebind, ...): a wing hooks in through the core's seams (policy.hpp's contract,
    core_extension's key, scope_services), never the other way round. Comments do not count."""
    code = re.sub(r"//[^\n]*", "", text)
    found = [f"names the wing detail {m.group(0)}" for m in WING_DETAIL_NAME.finditer(code)]
    found += [f"opens a wing's namespace: {m.group(0)}" for m in WING_NAMESPACE.finditer(code)]
    return found[:3]


def main():
    problems = []
    for directory, _, files in os.walk(ROOT):
        for name in sorted(files):
            if not name.endswith((".hpp", ".cuh")):
                continue
            path = os.path.join(directory, name)
            rel = os.path.relpath(path, ROOT).replace(os.sep, "/")
            text = open(path, encoding="utf-8").read()
            wing = folder_of(rel)
            is_detail = "/detail/" in "/" + rel
            for target in [t for t in INCLUDE.findall(text) if t.endswith((".hpp", ".cuh"))]:
                target_wing = folder_of(target)
                target_detail = "/detail/" in "/" + target
                if target in BASE:
                    continue
                if wing == "":
                    # the root: base files include only base files; entry headers include any
                    # public header, never a detail one (the one exception: the deprecated
                    # deprecated forwards detail/hooks.hpp and detail/no_hooks.hpp)
                    if rel in BASE:
                        problems.append(f"{rel}: a base file includes {target}")
                    elif target_detail and rel not in ("detail/hooks.hpp", "detail/no_hooks.hpp"):
                        problems.append(f"{rel}: an entry header includes the detail file {target}")
                    continue
                if target_wing == "":
                    problems.append(f"{rel}: includes the entry header {target}; include the "
                                    "file it forwards to")
                    continue
                if target_wing != wing and target_wing not in FOLDER_RULES[wing]:
                    problems.append(f"{rel}: {wing}/ may not include {target_wing}/ ({target})")
                elif target_wing != wing and target_detail and target_wing not in SHARED_DETAIL:
                    problems.append(f"{rel}: includes another wing's detail file {target}")
            problems += [f"{rel}: {p}" for p in namespace_problems(text, wing, is_detail)]
            if wing in SHARED_DETAIL:
                problems += [f"{rel}: {p}" for p in wing_name_problems(text)]
            declarations = public_declarations(text)
            if is_detail and declarations:
                problems.append(f"{rel}: a detail file declares public names: "
                                + "; ".join(declarations[:3]))
            if wing == "" and rel not in BASE and declarations:
                problems.append(f"{rel}: an entry header declares something: "
                                + "; ".join(declarations[:3]))
    problems += design_md_agrees()
    for p in problems:
        print("floor plan:", p, file=sys.stderr)
    print(f"floor plan: {len(problems)} problem(s)")
    return 1 if problems else 0


def design_md_agrees():
    """docs/design.md's table of folders must list FOLDER_RULES exactly."""
    try:
        text = open("docs/design.md", encoding="utf-8").read()
    except OSError:
        return ["docs/design.md is missing"]
    rows = dict(re.findall(r"^\| `(\w+)/` \| [^|]*\| ([^|]*) \|", text, flags=re.M))
    problems = []
    for folder, allowed in FOLDER_RULES.items():
        if folder not in rows:
            problems.append(f"docs/design.md's floor plan has no row for {folder}/")
            continue
        listed = sorted(re.findall(r"`(\w+)/`", rows[folder]))
        if listed != sorted(allowed):
            problems.append(f"docs/design.md says {folder}/ may include {listed or 'nothing else'}, "
                            f"this script {sorted(allowed)}")
    return problems


if __name__ == "__main__":
    sys.exit(main())
