#!/usr/bin/env python3
"""The first look's figures of a zoo sitting (scripts/zoo.sh), one Markdown row per run:

- zero share: the number column whose share of exact zeros is furthest from the real
  rows' (columns where at least 5 % of real rows are 0), real vs synthetic;
- rules broken: the share of synthetic rows that break any rule (the release obeys them:
  0 expected);
- condition share: the rule whose condition's share moved most, real vs synthetic (a
  rule kept by dropping a group shows here);
- moved: the column that keeping rows moved most, from the statement beside the CSV
  (drawn vs kept, synthetic only), or '-' when none moved by more than 0.05.

    python3 scripts/zoo_summary.py OUTDIR

Standard library only: rules are read by dpsynth's grammar for the few forms the zoo uses
(`col >= v`, `col <= col`, `a -> b`).
"""

import csv
import glob
import json
import os
import re
import sys


def read(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def num(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def zero_gap(real, syn, schema):
    worst = None
    n_r, n_s = len(real), max(len(syn), 1)
    for c in schema["columns"]:
        if c["kind"] != "continuous" or c.get("time_format"):
            continue
        name = c["name"]
        r = sum(1 for row in real if num(row.get(name)) == 0) / n_r
        if r < 0.05:
            continue
        s = sum(1 for row in syn if num(row.get(name)) == 0) / n_s
        if worst is None or abs(r - s) > abs(worst[1] - worst[2]):
            worst = (name, r, s)
    return worst


def holds(cond, row):
    m = re.fullmatch(r"\s*`?([\w.-]+)`?\s*(>=|<=|>|<|=|!=)\s*`?([\w.-]+)`?\s*", cond)
    if not m:
        return None
    left, op, right = m.groups()
    a = num(row.get(left))
    b = num(right) if num(right) is not None else num(row.get(right))
    if a is None or b is None:
        return None
    return {">=": a >= b, "<=": a <= b, ">": a > b, "<": a < b, "=": a == b, "!=": a != b}[op]


def rule_figures(rules, real, syn):
    broken = 0
    cond_worst = None
    for row in syn:
        for r in rules:
            if "->" in r:
                continue
            if "=>" in r:
                when, then = r.split("=>")
                if holds(when, row) and holds(then, row) is False:
                    broken += 1
                    break
            elif holds(r, row) is False:
                broken += 1
                break
    for r in rules:
        if "=>" not in r:
            continue
        when = r.split("=>")[0]
        a = sum(1 for row in real if holds(when, row)) / len(real)
        b = sum(1 for row in syn if holds(when, row)) / max(len(syn), 1)
        if cond_worst is None or abs(a - b) > abs(cond_worst[1] - cond_worst[2]):
            cond_worst = (when.strip(), a, b)
    # `a -> b`: rows whose right value is not the one most rows with their left hold.
    for r in rules:
        if "->" not in r:
            continue
        left, right = [s.strip().strip("`") for s in r.split("->")]
        right = right.split("{")[0].strip()
        by = {}
        for row in syn:
            by.setdefault(row.get(left), {}).setdefault(row.get(right), 0)
            by[row.get(left)][row.get(right)] += 1
        broken += sum(sum(v.values()) - max(v.values()) for v in by.values())
    return broken / max(len(syn), 1), cond_worst


def pct(x):
    return f"{100 * x:.1f} %"


def main():
    out = sys.argv[1]
    tables = {t["name"]: t for t in json.load(open(os.path.join(out, "tables", "tables.json")))}
    print("| table | rows × cols | run | zero share: column real → synthetic | rules broken | condition share: real → synthetic | moved by keeping rows |")
    print("|---|---|---|---|---|---|---|")
    for name, t in tables.items():
        real = read(os.path.join(out, "tables", f"{name}.csv"))
        schema = json.load(open(os.path.join(out, "tables", f"{name}.schema.json")))
        rules = [l.strip() for l in open(os.path.join(out, "tables", f"{name}.rules")) if l.strip()]
        for path in sorted(glob.glob(os.path.join(out, f"{name}.*.csv"))):
            run = os.path.basename(path)[len(name) + 1:-4]
            syn = read(path)
            z = zero_gap(real, syn, schema)
            zs = f"{z[0]} {pct(z[1])} → {pct(z[2])}" if z else "-"
            with_rules = run.endswith("-rules")
            b, cw = rule_figures(rules, real, syn) if with_rules else (None, None)
            bs = pct(b) if b is not None else "-"
            cs = f"`{cw[0]}` {pct(cw[1])} → {pct(cw[2])}" if cw else "-"
            side = path + ".privacy.json"
            moved = "-"
            if os.path.exists(side):
                st = json.load(open(side))
                m = st.get("moved", {}).get("columns", [])
                if m:
                    m = m[0]
                    moved = f"{m['column']} {m['value']}: {pct(m['share_drawn'])} → {pct(m['share_kept'])}"
            print(f"| {name} | {t['rows']} × {t['columns']} | {run} | {zs} | {bs} | {cs} | {moved} |")


if __name__ == "__main__":
    main()
