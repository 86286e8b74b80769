#!/usr/bin/env python3
"""One facility per header: no public or detail header over 400 lines, no class over 300.

    scripts/check-sizes.py include/graphcap

A class is counted from the line that opens it (`class name ... {` or `struct name ... {`) to the
line at the same indentation that closes it (`};`). Prints every header and class over its
limit; exit status 1 if there is one.
"""
import pathlib
import re
import sys

HEADER_LIMIT = 400
CLASS_LIMIT = 300
OPENING = re.compile(r"^(\s*)(?:template\s*<.*>\s*)?(class|struct)\s+(?:\[\[[^\]]*\]\]\s*)?(\w+)[^;]*\{\s*$")


def classes(lines):
    """(name, first line, last line) of each class or struct defined over several lines."""
    found = []
    for index, line in enumerate(lines):
        match = OPENING.match(line)
        if not match:
            continue
        indent = match.group(1)
        for end in range(index + 1, len(lines)):
            if lines[end].startswith(indent + "};") and not lines[end].startswith(indent + " "):
                found.append((match.group(3), index + 1, end + 1))
                break
    return found


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "include/graphcap")
    problems = []
    headers = sorted([*root.rglob("*.hpp"), *root.rglob("*.cuh")])
    for header in headers:
        lines = header.read_text().splitlines()
        if len(lines) > HEADER_LIMIT:
            problems.append(f"{header}: {len(lines)} lines (at most {HEADER_LIMIT})")
        for name, first, last in classes(lines):
            if last - first + 1 > CLASS_LIMIT:
                problems.append(f"{header}:{first}: class {name} is {last - first + 1} lines "
                                f"(at most {CLASS_LIMIT})")
    for problem in problems:
        print(problem)
    print(f"sizes: {len(headers)} headers checked, {len(problems)} over their limits")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
