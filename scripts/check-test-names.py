#!/usr/bin/env python3
"""Every Catch2 test name can be a CTest name: no ';' (CMake splits a name at ';' into two tests
that both fail: sessions 12 and 15 each shipped one) and no '[' outside its tags.

Reads TEST_CASE, TEST_CASE_METHOD, SCENARIO and TEMPLATE_TEST_CASE names (adjacent string
literals joined) in the given folders' .cpp and .cu files. Usage: scripts/check-test-names.py test
"""
import pathlib
import re
import sys

MACRO = re.compile(r"\b(TEST_CASE_METHOD|TEMPLATE_TEST_CASE|TEST_CASE|SCENARIO)\s*\(")
LITERAL = re.compile(r'\s*"((?:[^"\\]|\\.)*)"')


def first_name(text, start, macro):
    """The test name: the first argument (the second for TEST_CASE_METHOD), literals joined."""
    at = start
    if macro == "TEST_CASE_METHOD":
        at = text.index(",", at) + 1
    parts = []
    while True:
        match = LITERAL.match(text, at)
        if not match:
            break
        parts.append(match.group(1))
        at = match.end()
    return "".join(parts) if parts else None


problems = 0
names = 0
for folder in sys.argv[1:]:
    for path in sorted(pathlib.Path(folder).rglob("*")):
        if path.suffix not in (".cpp", ".cu") or not path.is_file():
            continue
        text = path.read_text()
        for match in MACRO.finditer(text):
            name = first_name(text, match.end(), match.group(1))
            if name is None:
                continue
            names += 1
            if ";" in name:
                line = text.count("\n", 0, match.start()) + 1
                print(f"{path}:{line}: test name with ';' (CTest splits it in two): {name}")
                problems += 1
print(f"test names: {names} checked, {problems} problems")
sys.exit(1 if problems else 0)
