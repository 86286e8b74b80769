#!/usr/bin/env python3
"""Every C++ snippet of the given docs is a region of a compiled example.

A region is the text between `// [name]` and `// [/name]` in an examples/*.cu file (dedented).
Each ```cpp block of a doc must equal one region exactly, so that the docs show code that CI
builds and the GPU machine runs. A block of any language whose first line names a file of the
repository (`// examples/first/first.cu - ...`, `# examples/first/CMakeLists.txt - ...`) must
equal that whole file: the README's first program. Usage: scripts/check-doc-snippets.py
docs/ecosystem.md ... README.md
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
files = 0
for doc in sys.argv[1:]:
    for block in re.findall(r"```[\w+-]*\n(.*?)```", pathlib.Path(doc).read_text(), re.S):
        named = re.match(r"(?://|#) ([\w./-]+) - ", block)
        if named and (root / named.group(1)).is_file():
            files += 1
            if block.strip("\n") != (root / named.group(1)).read_text().strip("\n"):
                problems += 1
                print(f"{doc}: the block naming {named.group(1)} differs from that file\n")
    for block in re.findall(r"```cpp\n(.*?)```", pathlib.Path(doc).read_text(), re.S):
        block = block.strip("\n")
        if block not in regions:
            problems += 1
            print(f"{doc}: a C++ snippet that is no example's region:\n{block[:300]}\n")
print(f"doc snippets: {len(sys.argv) - 1} docs checked against {len(regions)} example regions "
      f"and {files} whole files, {problems} problems")
sys.exit(1 if problems else 0)
