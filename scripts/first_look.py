#!/usr/bin/env python3
"""The first look's six shares on Adult- or CPS 1991-shaped CSVs (real and synthetic),
standard library only.

    python3 scripts/first_look.py REAL.csv SYNTHETIC.csv [MORE.csv …]

Adult (assets/adult): for each file, rows with capital-gain exactly 0, capital-loss exactly
0, both > 0, education and education-num disagreeing (each education's commonest
education-num in the real file is its value), Husband not Male or Wife not Female, and
Husband/Wife not married.

CPS 1991 (assets/cps91, recognised by its `inlf` column): rows with hours exactly 0, hours
exactly 40, earns exactly 0, husearns at its top code 1923, out of the labour force but
working hours, and in it with no hours.

Prints a Markdown table (one column per file). Figures go to docs/results.md.
"""
import collections
import csv
import sys

MARRIED = {"Married-civ-spouse", "Married-AF-spouse"}


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def education_map(real):
    seen = collections.defaultdict(collections.Counter)
    for r in real:
        seen[r["education"]][num(r["education-num"])] += 1
    return {e: c.most_common(1)[0][0] for e, c in seen.items()}


def shares(rs, edu):
    n = len(rs)
    pct = lambda k: 100.0 * k / max(n, 1)
    gain = [num(r["capital-gain"]) for r in rs]
    loss = [num(r["capital-loss"]) for r in rs]
    return [
        pct(sum(g == 0 for g in gain)),
        pct(sum(l == 0 for l in loss)),
        pct(sum((g or 0) > 0 and (l or 0) > 0 for g, l in zip(gain, loss))),
        pct(sum(r["education"] in edu and num(r["education-num"]) != edu[r["education"]] for r in rs)),
        pct(sum((r["relationship"] == "Husband" and r["sex"] != "Male")
                or (r["relationship"] == "Wife" and r["sex"] != "Female") for r in rs)),
        pct(sum(r["relationship"] in ("Husband", "Wife") and r["marital-status"] not in MARRIED for r in rs)),
    ]


CPS_NAMES = ["hours exactly 0", "hours exactly 40", "earns exactly 0", "husearns at its top code 1923",
             "inlf no but hours > 0", "inlf yes but hours 0"]


def cps_shares(rs):
    n = len(rs)
    pct = lambda k: 100.0 * k / max(n, 1)
    hours = [num(r["hours"]) for r in rs]
    return [
        pct(sum(h == 0 for h in hours)),
        pct(sum(h == 40 for h in hours)),
        pct(sum(num(r["earns"]) == 0 for r in rs)),
        pct(sum(num(r["husearns"]) == 1923 for r in rs)),
        pct(sum(r["inlf"] == "no" and (h or 0) > 0 for r, h in zip(rs, hours))),
        pct(sum(r["inlf"] == "yes" and h == 0 for r, h in zip(rs, hours))),
    ]


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    real = rows(sys.argv[1])
    if real and "inlf" in real[0]:
        names, share = CPS_NAMES, cps_shares
    else:
        edu = education_map(real)
        names = ["capital-gain exactly 0", "capital-loss exactly 0", "capital gain and loss both > 0",
                 "education and education-num disagree", "Husband not Male, or Wife not Female",
                 "Husband/Wife not married"]
        share = lambda rs: shares(rs, edu)
    cols = [(p, share(rows(p))) for p in sys.argv[1:]]
    print("| share of rows | " + " | ".join(p.split("/")[-1] for p, _ in cols) + " |")
    print("|---|" + "---|" * len(cols))
    for i, name in enumerate(names):
        print(f"| {name} | " + " | ".join(f"{s[i]:.2f} %" for _, s in cols) + " |")


if __name__ == "__main__":
    main()
