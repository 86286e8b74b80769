#!/usr/bin/env python3
"""Every C++ snippet of the given docs is a region of a compiled example.

A region is the text between `// [name]` and `// [/name]` in an examples/*.cu file (dedented).
Each ```cpp block of a doc must equal one region exactly, so that the docs show code that CI
builds and the GPU machine runs. Usage: scripts/check-doc-snippets.py docs/ecosystem.md ...
"""
import pathlib
import re
import sys
import textwrap

root = pathlib.Path(__file__).resolve().parent.parent
regions = {}
for example in sorted((root / "examples").glob("*.cu")):
    text = example.read_text()
    for match in re.finditer(r"^[ \t]*// \[([\w-]+)\]\n(.*?)^[ \t]*// \[/\1\]\n", text,
                             re.S | re.M):
        regions[textwrap.dedent(match.group(2)).strip("\n")] = f"{example.name}:{match.group(1)}"

problems = 0
for doc in sys.argv[1:]:
    for block in re.findall(r"```cpp\n(.*?)```", pathlib.Path(doc).read_text(), re.S):
        block = block.strip("\n")
        if block not in regions:
            problems += 1
            print(f"{doc}: a C++ snippet that is no example's region:\n{block[:300]}\n")
print(f"doc snippets: {len(sys.argv) - 1} docs checked against {len(regions)} example regions, "
      f"{problems} problems")
sys.exit(1 if problems else 0)
