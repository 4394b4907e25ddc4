#!/usr/bin/env python3
"""Strangers' tables for scripts/zoo.sh: public tables that ship inside Python packages
(statsmodels, scikit-learn), picked by shape before any dpsynth run on them, written as CSV
with a typed schema and (where the codebook has them) rules.

    python3 scripts/zoo_tables.py OUTDIR

The list is fixed here, in the order it was chosen; nothing is dropped or tuned after a
look at results. The schema stands in for what a user types from a codebook: each number
column's bounds rounded outwards to a round figure (the data's extremes would be a fact of
the rows), each category column's levels as the codebook lists them (the package's own
levels), everything `user_provided`, no exact values named. Rules are the codebook's
facts; `dpsynth train` tells, as a local notice in each run's log, how many real rows break
each.

Needs: pip install statsmodels scikit-learn pandas
"""

import json
import math
import os
import sys

import pandas as pd


def round_out(lo, hi):
    """Bounds a codebook would print: outwards to a round figure (a column one value fills
    gets the unit above it, as a codebook lists a scale, not a constant)."""
    if hi <= lo:
        return lo, lo + 1
    span = max(hi - lo, 1e-9)
    step = 10 ** math.floor(math.log10(span))
    return math.floor(lo / step) * step, math.ceil(hi / step) * step


def schema_of(df, categorical=(), dates=(), bounds=None):
    cols = []
    for name in df.columns:
        s = df[name]
        if name in dates:
            cols.append({"name": name, "kind": "continuous", "integer": True,
                         "time_format": "%Y-%m-%d",
                         "domain": {"bounds": {"lower": -3653, "upper": 21915}},
                         "provenance": "user_provided"})
        elif name in categorical or s.dtype == object:
            levels = sorted({str(v) for v in s.dropna()})
            kind = "binary" if len(levels) == 2 else "categorical"
            cols.append({"name": name, "kind": kind, "domain": {"categories": levels},
                         "provenance": "user_provided"})
        else:
            lo, hi = (bounds or {}).get(name) or round_out(float(s.min()), float(s.max()))
            whole = bool((s.dropna() % 1 == 0).all())
            c = {"name": name, "kind": "continuous", "domain": {"bounds": {"lower": lo, "upper": hi}},
                 "provenance": "user_provided"}
            if whole:
                c["integer"] = True
            cols.append(c)
    return {"format": "dpsynth-schema/1", "columns": cols}


def tables():
    import statsmodels.api as sm
    from sklearn import datasets as skd

    out = []
    # 1. Zero-inflated counts: affairs (time spent in extramarital affairs), 6,366 women.
    fair = sm.datasets.fair.load_pandas().data
    fair["occupation"] = fair["occupation"].astype(int).astype(str)
    fair["occupation_husb"] = fair["occupation_husb"].astype(int).astype(str)
    out.append(("fair", fair, ["occupation", "occupation_husb"], [], [
        "affairs >= 0",
        "yrs_married <= age",
    ], "affairs"))
    # 2. Zero-inflated doctor visits: RAND health insurance experiment, 20,190 person-years.
    rand = sm.datasets.randhie.load_pandas().data
    # The plans' coinsurance rates are a codebook's short list: an individual deductible
    # plan has either none or the 95 % rate (ln(1 + 100) = 4.61512).
    out.append(("randhie", rand, [], [], [
        "mdvis >= 0",
        "idp = 1 => lncoins in {0, 4.61512}",
    ], "mdvis"))
    # 3. Under 1,000 rows, coded answers: the 1996 American National Election Study (944).
    anes = sm.datasets.anes96.load_pandas().data
    for c in ["vote", "PID", "selfLR", "ClinLR", "DoleLR", "educ"]:
        anes[c] = anes[c].astype(int).astype(str)
    out.append(("anes96", anes, ["vote", "PID", "selfLR", "ClinLR", "DoleLR", "educ"], [], [], "vote"))
    # 4. Under 1,000 rows, many shares: California schools' test results (303 districts).
    star = sm.datasets.star98.load_pandas().data
    out.append(("star98", star, [], [], [], None))
    # 5. Dates: US quarterly macro data (203 quarters), the quarter as a date.
    macro = sm.datasets.macrodata.load_pandas().data
    macro.insert(0, "quarter_start", [
        f"{int(y)}-{3 * (int(q) - 1) + 1:02d}-01" for y, q in zip(macro["year"], macro["quarter"])])
    macro["quarter"] = macro["quarter"].astype(int).astype(str)
    out.append(("macrodata", macro, ["quarter"], ["quarter_start"], ["unemp >= 0"], None))
    # 6. More than 50 columns: 8x8 handwritten digits (1,797 rows, 64 pixels + label).
    dig = skd.load_digits(as_frame=True).frame
    dig["target"] = dig["target"].astype(str)
    # The codebook's scale: every pixel is a count of set cells in a 4x4 block, 0-16.
    bounds = {c: (0, 16) for c in dig.columns if c != "target"}
    out.append(("digits", dig, ["target"], [], [], "target", bounds))
    # 7. A codebook identity: travel mode choice, four rows per traveller, whose household
    #    income and party size are the traveller's (840 rows).
    mode = sm.datasets.modechoice.load_pandas().data
    for c in ["individual", "mode", "choice"]:
        mode[c] = mode[c].astype(int).astype(str)
    out.append(("modechoice", mode, ["individual", "mode", "choice"], [], [
        "individual -> hinc",
        "individual -> psize",
    ], "choice"))
    # 8. Under 1,000 rows, 31 measurements: breast cancer diagnoses (569).
    bc = skd.load_breast_cancer(as_frame=True).frame
    bc["target"] = bc["target"].astype(str)
    out.append(("breast_cancer", bc, ["target"], [], [], "target"))
    return out


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "zoo"
    os.makedirs(out, exist_ok=True)
    listing = []
    for name, df, cats, dates, rules, label, *given in tables():
        df.columns = [str(c).replace(" ", "_") for c in df.columns]
        csv = os.path.join(out, f"{name}.csv")
        df.to_csv(csv, index=False)
        schema = schema_of(df, set(cats), set(dates), given[0] if given else {})
        schema["columns"] = [c for c in schema["columns"]]
        sp = os.path.join(out, f"{name}.schema.json")
        with open(sp, "w") as f:
            json.dump(schema, f, indent=2)
        rp = os.path.join(out, f"{name}.rules")
        with open(rp, "w") as f:
            f.write("".join(r + "\n" for r in rules))
        listing.append({"name": name, "rows": len(df), "columns": df.shape[1],
                        "rules": len(rules), "label": label})
    with open(os.path.join(out, "tables.json"), "w") as f:
        json.dump(listing, f, indent=2)
    for t in listing:
        print(f"{t['name']}: {t['rows']} rows x {t['columns']} columns, {t['rules']} rules")


if __name__ == "__main__":
    main()
