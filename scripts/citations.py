#!/usr/bin/env python3
"""Audits the measured figures quoted in README.md and docs/*.md against the stored runs (#50).

    python3 scripts/citations.py > docs/results/CITATIONS.md

A figure is a number with a unit of measure (ns, us, ms, ms/GiB, GB/s, KiB, MiB, a ratio written
1.23x, minutes), a test count ("683 tests, 674 passed", "24 of 24 passed"), or a decimal number in a table
row. Thresholds (a number after >=, <=, under, within, +-, a goal) are skipped.

A figure's source is the stored run its text names, looked for on its line, then in its paragraph
(the lines up to a blank line, a table counting as one), then in its section's heading, then in the
paragraphs just before and after, then in the headings above: a
docs/results/<folder> path or link, a session named ("session 16", mapped to its folder), or a run
date (2026-11-29, 2026-11-30). A figure is verified when a number in that folder's stored text files
(csv, md, log, txt, out; run*.txt and a folder's README.md, which are
written about a run, left out) equals it at the precision quoted (also read as ns<->us
and us<->ms). This checks that the number is there, not that it is the same row: a match of a short
number may be chance, and a figure computed from stored numbers (a ratio of two medians, a sum)
reads as not verified though it may be right. Figures without a source are searched for in every
stored folder, and the folders holding them are listed as candidates.

Also (rules added for #50's last pass):
- A figure after "less than", "more than", "up to" or "multiples of" is a bound, skipped like a goal.
- A leading minus is the figure's sign (-10.1 ns is looked for as -10.1).
- "not stored" (or "never stored", "unstored") on a figure's own line, or for a table row in the
  table's heading or caption, says the run was not kept: a figure not found in a run the text cites
  is then listed apart as declared not stored, not as a mismatch. Said elsewhere in a paragraph it
  counts for nothing (it may be said of another figure).
- scripts/citations-exempt.txt names figures that are not measurements (parameters, sizes of an
  API's contract), figures quoted from another project, a test's printed output on the double
  (`test output: <test file>`, deterministic, the file must exist), and figures computed from a run's numbers:
  `computed: a / b` (each operand must be in the named run, the result must round to the figure)
  or `computed: paired <csv> :: <metric> :: <param> :: <arm> :: <baseline>` (the median of the
  per-round ratios of the CSV's samples, as benchmark/harness.hpp computes it). Every exemption is
  listed in CITATIONS.md with its reason, and one that matches no figure is reported.
- `--check` prints the counts and fails when a figure has no stored run named, is not found in the
  run named (a failed computation included), or an exemption matches no figure (.ci/run runs it).
"""
import bisect
import csv
import functools
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RES = os.path.join(ROOT, "docs", "results")

SESSION_FOLDERS = {
    1: ["2026-11-29-h200-bench_replay.csv"], 2: ["2026-11-29-h200"], 3: ["2026-11-30-h200"],
    4: ["2026-11-30-h200-session4"], 5: ["2026-12-01-h200-session5"],
}
for d in sorted(os.listdir(RES)):
    # H200, or an H100 lent instead; a session's compile-time runs on the CI machine's kind too
    m = re.match(r"\d{4}-\d\d-\d\d-(?:h[12]00|compile-time)-session(\d+)$", d)
    if m:
        SESSION_FOLDERS.setdefault(int(m.group(1)), []).append(d)
DATE_FOLDERS = {"2026-11-29": ["2026-11-29-h200", "2026-11-29-h200-bench_replay.csv"],
                "2026-11-30": ["2026-11-30-h200", "2026-11-30-h200-session4"],
                "2026-12-01": ["2026-12-01-h200-session5"]}

NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
JOIN = r"\s*(?:-|–|/|to|and|against|,|or)\s*"
UNIT = r"(ms/GiB|GB/s|ns|us|µs|ms|KiB|MiB|minutes|x)(?![A-Za-z])"
FIG = re.compile(rf"(?<![\w.#/-])(-?(?:{NUM})(?:{JOIN}(?:{NUM}))*)\s?{UNIT}")  # a leading - is a sign
TESTS = re.compile(r"(\d[\d,]*) tests?, (\d[\d,]*) passed|(\d[\d,]*) of (\d[\d,]*) passed")
SKIP_BEFORE = re.compile(r"(>=|<=|≥|≤|under|within|\+-|±|goal|below|above|over|at least|at most|~|less than|more than"
                         r"|up to|multiples of)\s*$")
NOT_STORED = re.compile(r"\bnot stored\b|\bnever stored\b|\bunstored\b", re.I)
CITE_PATH = re.compile(r"(?:docs/)?results/(\d{4}-\d\d-\d\d-h[12]00[\w.-]*)((?:/[\w.*{},-]+)*)")
CITE_SESSION = re.compile(r"[Ss]essions? ((?:\d+(?:, | and | to |-|–))*\d+)")
CITE_DATE = re.compile(r"\b(2026-1[12]-\d\d)\b")


def cites(text):
    out = []
    for m in CITE_PATH.finditer(text):
        out.append((m.group(1), "results/" + m.group(1) + (m.group(2) or "")))
    for m in CITE_SESSION.finditer(text):
        nums = [int(n) for n in re.findall(r"\d+", m.group(1))]
        if re.search(r" to |-|–", m.group(1)) and len(nums) == 2:
            nums = list(range(nums[0], nums[1] + 1))
        for n in nums:
            for f in SESSION_FOLDERS.get(n, []):
                out.append((f, f"session {n}"))
    if out:
        return out  # a path or a session named: a date beside it says when, not which run
    for m in CITE_DATE.finditer(text):
        for f in DATE_FOLDERS.get(m.group(1), []):
            out.append((f, m.group(1)))
    return out


_cache = {}


def numbers_in(folder):
    if folder in _cache:
        return _cache[folder]
    vals = []
    path = os.path.join(RES, folder)
    files = [path] if os.path.isfile(path) else [
        os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs]
    for p in files:
        if not re.search(r"\.(csv|md|log|txt|out)$", p) or re.search(r"/(run[-\w]*\.txt|README\.md)$", p):
            continue
        try:
            text = open(p, encoding="utf-8", errors="replace").read()
        except OSError:
            continue
        rel = os.path.relpath(p, RES)
        base = os.path.basename(p)
        kind = "counts" if re.match(r"(ctest|suite)", base) else (
            "noise" if re.match(r"(build|configure|ps|runs)\.log$|summary\.txt$|.*\.out$|memcheck|racecheck", base)
            else "data")
        if kind == "counts":
            # ctest's summary gives the total and the failures; skips are listed one a line: the
            # passed count the docs quote is total - failed - skipped
            for m in re.finditer(r"(\d+)% tests passed, (\d+) tests? failed out of (\d+)", text):
                failed, total = int(m.group(2)), int(m.group(3))
                skipped = len(re.findall(r"\(Skipped\)", text))
                for n in (total, total - failed - skipped, total - failed):
                    vals.append((float(n), rel + " (summary)", kind, None))
        for line in text.split("\n"):
            units = None
            if p.endswith(".csv"):
                # only the statistics (median, p99, mean, min), not the parameter or the samples
                um = re.match(r'^"[^"]*","[^"]*","[^"]*","[^"]*","([^"]*)",([^,]*),([^,]*),([^,]*),([^,]*),', line)
                if um:
                    units = {um.group(1)}
                    line = " ".join(um.groups()[1:])
                elif not re.match(r"^[\d., ]+$", line):
                    continue
                else:
                    units = set()
            elif "|" not in line:  # a table row holds its unit in its header: any unit
                units = set(re.findall(r"(?<![A-Za-z])(ms/GiB|GB/s|ns|us|µs|ms|KiB|MiB|GiB)(?![A-Za-z])", line))
                units = {"us" if u == "µs" else u for u in units}
                if re.search(r"\dx\b|ratio", line) or re.match(r"(bench[\w-]*|run\d[\w-]*|repeat)\.log$", base):
                    units.add("x")
            for m in re.finditer(r"(?<![\w.])-?\d+(?:\.\d+)?(?:e[-+]?\d+)?", line.replace(",", " ")):
                try:
                    vals.append((float(m.group(0)), rel, kind, units))
                except ValueError:
                    pass
    _cache[folder] = vals
    return vals


_sorted = {}


def _by_value(folder):
    """The folder's numbers sorted by value (each with its place in the file order), for bisection."""
    if folder not in _sorted:
        vals = numbers_in(folder)
        order = sorted(range(len(vals)), key=lambda i: vals[i][0])
        _sorted[folder] = ([vals[i][0] for i in order], order, vals)
    return _sorted[folder]


def found(value, unit, folders, every=False):
    hits = []
    s = value.replace(",", "")
    dec = len(s.split(".")[1]) if "." in s else 0
    v = float(s)
    # an integer may be a rounded median (1018.81 quoted as 1019); a count must match exactly
    tol = 0.5 * 10 ** -dec + 1e-9 if dec else (0.5 if unit != "tests" else 1e-9)
    scales = [1.0]
    if unit in ("us", "µs", "ns", "ms"):
        scales += [1000.0, 0.001]
    scaled = {"ns": {1.0: "ns", 1000.0: "us", 0.001: None}, "us": {1.0: "us", 1000.0: "ms", 0.001: "ns"},
              "µs": {1.0: "us", 1000.0: "ms", 0.001: "ns"}, "ms": {1.0: "ms", 1000.0: "s", 0.001: "us"}}
    for f in folders:
        keys, order, vals = _by_value(f)
        # the numbers within tolerance at any scale, visited in file order (the first hit is reported)
        cand = set()
        for k in scales:
            lo = bisect.bisect_left(keys, (v - tol) / k - 1e-12)
            hi = bisect.bisect_right(keys, (v + tol) / k + 1e-12)
            cand.update(order[lo:hi])
        for idx in sorted(cand):
            n, rel, kind, units = vals[idx]
            if (unit == "tests") != (kind == "counts") or kind == "noise":
                continue
            for k in scales:
                if units is not None and unit and unit != "tests":
                    want = scaled.get(unit, {}).get(k, "us" if unit == "µs" else unit)
                    if want not in units and not (unit == "x" and units & {"ratio", "x"}):
                        continue
                if abs(n * k - v) <= tol:
                    if dec == 0 and k != 1.0 and abs(n * k - v) > 1e-9:
                        continue
                    if not every:
                        return rel
                    hits.append(rel)
                    break
    return hits if every else None


@functools.lru_cache(maxsize=None)
def place(rel):
    """A stored file, with run1..runN collapsed (the same file of each run of a set)."""
    return re.sub(r"(^|/)run\d+(/|\.log$)", r"\1run*\2", rel.split(" ")[0])


def sig_digits(value):
    return len(value.replace(",", "").replace(".", "").lstrip("-").lstrip("0"))


def figures(line):
    out = []
    for m in FIG.finditer(line):
        if SKIP_BEFORE.search(line[:m.start()]):
            continue
        unit = m.group(2)
        nums = re.findall(NUM, m.group(1))
        if m.group(1).startswith("-"):
            nums[0] = "-" + nums[0]
        if unit == "x":
            nums = [n for n in nums if "." in n]
            if line[m.end():m.end() + 1].isalnum():
                continue
        for n in nums:
            out.append((n, unit, m.group(0)))
    for m in TESTS.finditer(line):
        for n in m.groups():
            if n:
                out.append((n, "tests", m.group(0)))
    if line.lstrip().startswith("|"):
        taken = {n for n, _, _ in out}
        for cell in line.strip().strip("|").split("|"):
            if SKIP_BEFORE.search(cell) or re.search(r"[<>≥≤]", cell):
                continue
            if re.sub(r"\b(ms/GiB|GB/s|ns|us|µs|ms|KiB|MiB|x|of|and|to|run|runs)\b", "", cell).strip(" \t.,;:/()*-–+±%x0123456789"):
                continue  # a cell of words (a version, a name): only its unit-bearing figures count
            for n in re.findall(r"(?<![\w.-])-?\d+\.\d+(?![\w.])", cell):
                if n not in taken:
                    out.append((n, "", cell.strip()))
    return out


def audit(path):
    rel = os.path.relpath(path, ROOT)
    lines = open(path, encoding="utf-8").read().split("\n")
    heads = {}
    rows = []
    in_code = False
    para_start = 0
    for i, line in enumerate(lines):
        if line.startswith("```"):
            in_code = not in_code
            continue
        if in_code:
            continue
        if not line.strip():
            para_start = i + 1
            continue
        h = re.match(r"(#+)\s", line)
        if h:
            lvl = len(h.group(1))
            heads = {k: v for k, v in heads.items() if k < lvl}
            heads[lvl] = line
            para_start = i + 1
            continue
        figs = figures(line)
        if not figs:
            continue
        j = i
        while j + 1 < len(lines) and lines[j + 1].strip() and not lines[j + 1].startswith("#"):
            j += 1
        para = "\n".join(lines[para_start:j + 1])
        # the paragraphs just before and after (a table's caption, the sentence that names the run)
        k = para_start - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        while k > 0 and lines[k - 1].strip() and not lines[k].startswith("#"):
            k -= 1
        m = j + 1
        while m < len(lines) and not lines[m].strip():
            m += 1
        e = m
        while e < len(lines) and lines[e].strip() and not lines[e].startswith("#"):
            e += 1
        before = "\n".join(l for l in lines[max(k, 0):para_start] if not l.startswith("#"))
        after = "\n".join(l for l in lines[m:e] if not l.startswith("#"))
        level, src = None, []
        nearest = heads[max(heads)] if heads else ""
        declared = None
        for lv, text in (("line", line), ("paragraph", para), ("heading", nearest), ("paragraph before", before),
                         ("paragraph after", after), ("headings above", "\n".join(heads.values()))):
            # "not stored" on the figure's own line, or for a table row in the table's heading or caption
            # (not elsewhere in the table, nor in a prose paragraph, where it may be said of another
            # figure): the text says the run was not kept. The search goes on: a figure found in a run
            # the text cites still counts as found.
            table = line.lstrip().startswith("|")
            if declared is None and (lv == "line" or table and lv in ("heading", "paragraph before")) \
                    and NOT_STORED.search(text):
                declared = lv
            src = cites(text)
            if src:
                level = lv
                break
        for n, unit, ctx in figs:
            rows.append((rel, i + 1, n, unit, ctx, level, src, declared, line))
    return rows


EXEMPT = os.path.join(ROOT, "scripts", "citations-exempt.txt")


def exemptions():
    """scripts/citations-exempt.txt: `file | text on the line | figure | reason`, one a line."""
    out = []
    if os.path.exists(EXEMPT):
        for k, line in enumerate(open(EXEMPT, encoding="utf-8").read().split("\n"), 1):
            if not line.strip() or line.startswith("#"):
                continue
            parts = [p.strip() for p in line.split(" | ")]
            if len(parts) != 4 or not re.match(r"(not a measurement|quoted|computed|test output): ", parts[3]):
                sys.exit(f"{EXEMPT}:{k}: want `file | text on the line | figure | reason`, the reason starting"
                         " `not a measurement: `, `quoted: `, `computed: ` or `test output: <test file>`")
            t = re.match(r"test output: (\S+)", parts[3])
            if t and not os.path.isfile(os.path.join(ROOT, t.group(1))):
                sys.exit(f"{EXEMPT}:{k}: {t.group(1)} is not a file of the repository")
            out.append([k] + parts + [0])
    return out


def paired(spec, folders):
    """`paired <csv under docs/results> :: <metric> :: <param> :: <arm> :: <baseline>`: the median of the
    per-round ratios arm / baseline from the CSV's samples, as benchmark/harness.hpp's paired_ratio
    computes it (sorted, element n/2), or a reason why not."""
    parts = [p.strip() for p in spec.split("::")]
    if len(parts) != 5:
        return None, "want paired <csv> :: <metric> :: <param> :: <arm> :: <baseline>"
    path, metric, param, arm, base = parts
    if not any(path == f or path.startswith(f + "/") for f in folders):
        return None, f"{path} is not in the run the text names"
    rows = {}
    try:
        for r in csv.reader(open(os.path.join(RES, path), encoding="utf-8")):
            if len(r) > 6 and r[1] == metric and r[2] == param:
                rows[r[3]] = [float(x) for x in r[-1].split()]
    except OSError:
        return None, f"{path} not stored"
    a, b = rows.get(arm), rows.get(base)
    if not a or not b or len(a) != len(b):
        return None, f"{path}: no paired samples for {arm} / {base}"
    ratios = sorted(x / y for x, y in zip(a, b))
    return ratios[len(ratios) // 2], None


def computed(reason, value, folders):
    """A `computed: a / b` reason: every operand in the named run, the result the figure as quoted."""
    expr = reason[len("computed: "):].split(";")[0].strip()
    s = value.replace(",", "")
    dec = len(s.split(".")[1]) if "." in s else 0
    if expr.startswith("paired "):
        got, why = paired(expr[len("paired "):], folders)
        if why:
            return why
        if abs(got - float(s)) > 0.5 * 10 ** -dec + 1e-9:
            return f"paired ratio {got:.{dec + 2}f}, not {value}"
        return None
    if not re.fullmatch(r"[\d.,\s()+*/-]+", expr):
        return f"not an expression: {expr}"
    for op in re.findall(r"\d[\d,]*(?:\.\d+)?", expr):
        if not found(op, "", folders):
            return f"operand {op} not in the named run"
    got = eval(expr.replace(",", ""))  # digits and operators only (checked above)
    if abs(got - float(s)) > 0.5 * 10 ** -dec + 1e-9:
        return f"{expr} = {got:.{dec + 2}f}, not {value}"
    return None


def main():
    check = "--check" in sys.argv[1:]
    files = [os.path.join(ROOT, "README.md")] + sorted(
        os.path.join(ROOT, "docs", f) for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md"))
    allfolders = sorted(os.listdir(RES))
    allfolders = [f for f in allfolders if f.startswith("20")]
    ex = exemptions()
    cited, uncited, declared, exempt = [], [], [], []
    used = {}
    for p in files:
        rows = audit(p)
        hits = {}
        for i, (rel, ln, n, unit, ctx, level, src, decl, text) in enumerate(rows):
            if level:
                hits[i] = found(n, unit, sorted({f for f, _ in src}), every=True)
        places_of = {i: {place(h) for h in hs} for i, hs in hits.items()}
        on_line = {}
        for i in hits:
            on_line.setdefault(rows[i][1], []).append(i)
        for i, (rel, ln, n, unit, ctx, level, src, decl, text) in enumerate(rows):
            # the entry's text on the line; where several entries fit, the one naming the figure's own
            # context (a table cell, a run of figures) first
            # (a value repeated there takes the entries in their order: run 1's, then run 3's)
            fits = [x for x in ex if x[1] == rel and x[2] in text and x[3].replace(",", "") == n.replace(",", "")]
            fits = [x for x in fits if x[2] in ctx or ctx in x[2]] or fits
            key = (rel, ln, ctx, n)
            used[key] = used.get(key, -1) + 1
            e = fits[min(used[key], len(fits) - 1)] if fits else None
            if e and not e[4].startswith("computed: "):
                e[5] += 1
                exempt.append((rel, ln, n, unit, ctx, e[4]))
                continue
            if e:
                e[5] += 1
                why = computed(e[4], n, sorted({f for f, _ in src})) if level else "no stored run named"
                if why is None:
                    cited.append((rel, ln, n, unit, ctx, level, src, "computed: " + e[4][len("computed: "):]))
                    continue
                hits[i] = []
                ctx = f"{ctx} ({why})"
            if level:
                # strong: another figure of the same line is found in the same file (a chance match
                # of two numbers in one file is unlikely), or a lone figure of 3+ significant digits
                mine = hits[i]
                others = [j for j in on_line[ln] if j != i]
                strong = [h for h in mine if any(place(h) in places_of[j] for j in others)]
                if strong:
                    hit = strong[0]
                elif mine and not others and sig_digits(n) >= 3:
                    hit = mine[0]
                elif mine:
                    hit = "weak: " + mine[0] + (" (the line's other figures are not there)" if others else " (a short number)")
                else:
                    hit = None
                if hit is None and decl:
                    declared.append((rel, ln, n, unit, ctx, decl))
                    continue
                cited.append((rel, ln, n, unit, ctx, level, src, hit))
            elif decl:
                declared.append((rel, ln, n, unit, ctx, decl))
            else:
                cands = [f for f in allfolders if found(n, unit, [f])]
                uncited.append((rel, ln, n, unit, ctx, cands))
    stale = [x for x in ex if x[5] == 0]
    notfound = sum(1 for r in cited if not r[7])
    if check:
        print(f"citations: {len(uncited)} figures with no stored run named, {notfound} not found in the named run, "
              f"{len(stale)} exemptions matching no figure")
        for x in stale:
            print(f"  {EXEMPT}:{x[0]}: matches no figure: {' | '.join(x[1:4])}")
        for rel, ln, n, unit, ctx, level, src, hit in cited:
            if not hit:
                print(f"  not found: {rel}:{ln}: {n} {unit} ({ctx[:60]})")
        for rel, ln, n, unit, ctx, cands in uncited:
            print(f"  no stored run named: {rel}:{ln}: {n} {unit} ({ctx[:60]})")
        sys.exit(1 if uncited or notfound or stale else 0)
    comp = sum(1 for r in cited if r[7] and r[7].startswith("computed"))
    ver = sum(1 for r in cited if r[7] and not r[7].startswith(("weak", "computed")))
    weak = sum(1 for r in cited if r[7] and r[7].startswith("weak"))
    w = sys.stdout.write
    w("# Citations of measured figures (issue #50)\n\n")
    w("Generated by `python3 scripts/citations.py > docs/results/CITATIONS.md`; how it reads a figure, its\n"
      "source and a match is in the script's header. Each stored run folder has a `run.txt` naming its\n"
      "commit, command, date and machine (or saying which of them is not recorded).\n\n")
    w(f"Figures found: **{len(cited) + len(uncited) + len(declared) + len(exempt)}**; with a named stored run: "
      f"**{len(cited)}** (verified {ver}, computed from its numbers {comp}, found only weakly {weak}, not found "
      f"**{notfound}**); with no stored run named: **{len(uncited)}**; said in the text to be from a run not "
      f"stored: {len(declared)}; not measurements or quoted from elsewhere (scripts/citations-exempt.txt): "
      f"{len(exempt)}; exemptions that match no figure: {len(stale)}.\n\n")
    w("\"yes\" = the number occurs, at the precision quoted, in a stored text file of the named run (the file\n"
      "is given), and either another figure of the same line occurs in the same file (run1..runN of a set counting as one) or the figure has three\n"
      "or more significant digits. \"weak\" = the number occurs there, but alone and short, or without the\n"
      "line's other figures: it may be chance (read the file). \"no\" = it does not occur (a figure computed\n"
      "from stored numbers, a rounding, another run, or a figure the run does not hold). None of this checks\n"
      "that the number is on the row the text says: that needs a reader.\n\n")
    esc = lambda s: s.replace("|", "\\|")

    def srcs(src):
        return ", ".join(sorted({label for _, label in src}))
    w("## Figures with no stored run named\n\n")
    w("No docs/results path, session with a stored folder, or run date on the line, in its paragraph or in\n"
      "the headings above it. \"found in\" lists the stored folders whose files hold the number (a hint, not a\n"
      "citation; short numbers match by chance).\n\n")
    w("| file:line | figure | context | found in |\n|---|---|---|---|\n")
    for rel, ln, n, unit, ctx, cands in uncited:
        c = ", ".join(cands[:4]) + (" ..." if len(cands) > 4 else "") if cands else "nowhere"
        w(f"| {rel}:{ln} | {n} {unit} | {esc(ctx)[:80]} | {c} |\n")
    w("\n## Figures with a named run that were not found in it\n\n")
    w("| file:line | figure | context | named run (where named) |\n|---|---|---|---|\n")
    for rel, ln, n, unit, ctx, level, src, hit in cited:
        if not hit:
            w(f"| {rel}:{ln} | {n} {unit} | {esc(ctx)[:80]} | {srcs(src)} ({level}) |\n")
    w("\n## Figures said to be from a run that was not stored\n\n")
    w("Their line (or, nearer than any citation, their paragraph or heading) says \"not stored\"; a figure\n"
      "found in a run cited further out is counted as found instead.\n\n")
    w("| file:line | figure | context | where it says so |\n|---|---|---|---|\n")
    for rel, ln, n, unit, ctx, decl in declared:
        w(f"| {rel}:{ln} | {n} {unit} | {esc(ctx)[:80]} | {decl} |\n")
    w("\n## Figures exempted (scripts/citations-exempt.txt)\n\n")
    w("| file:line | figure | context | reason |\n|---|---|---|---|\n")
    for rel, ln, n, unit, ctx, why in exempt:
        w(f"| {rel}:{ln} | {n} {unit} | {esc(ctx)[:80]} | {esc(why)} |\n")
    if stale:
        w("\n## Exemptions that match no figure\n\n")
        for x in stale:
            w(f"- scripts/citations-exempt.txt:{x[0]}: {esc(' | '.join(x[1:4]))}\n")
    w("\n## Figures with a named run found only weakly\n\n")
    w("| file:line | figure | context | named run (where named) | match |\n|---|---|---|---|---|\n")
    for rel, ln, n, unit, ctx, level, src, hit in cited:
        if hit and hit.startswith("weak"):
            w(f"| {rel}:{ln} | {n} {unit} | {esc(ctx)[:80]} | {srcs(src)} ({level}) | {hit[6:]} |\n")
    w("\n## Every figure with a named run\n\n")
    w("| file:line | figure | named run (where named) | verified |\n|---|---|---|---|\n")
    for rel, ln, n, unit, ctx, level, src, hit in cited:
        w(f"| {rel}:{ln} | {n} {unit} | {srcs(src)} ({level}) | {('' if hit.startswith('weak') else 'yes: ') + hit if hit else 'no'} |\n")


if __name__ == "__main__":
    main()
