#!/usr/bin/env python3
"""Wide public bounds on small tables: the share of synthetic rows past the real data's
largest value (where the real share is 0 by construction), and of blank cells in columns
that may be blank but have none, with MST's and AIM's noise floor on and off
(`--set noise_floor=false`), at epsilon = 1, over seeds. Writes a markdown table.

    python3 scripts/sparse_tails.py OUTDIR [SEEDS]

DPSYNTH names the binary (default: dpsynth on the PATH). The tables, picked by shape before
any run: a 753-row labour survey (made here, as the engine tests make it: hours 0 for the
43 % who do not work, 600-2,000 for the others) with hours bounded by a year's 8,760; the
1996 election study (944 rows, statsmodels) with age bounded 0-120 and income code 0-50;
the RAND health experiment's first 2,000 person-years (statsmodels) with doctor visits
bounded by a year's 365 days. Needs: pip install statsmodels pandas
"""
import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd


def survey():
    rng = np.random.default_rng(753)
    works = rng.random(753) < 0.57
    hours = np.where(works, np.round(1300 + 700 * (rng.random(753) - 0.5) * 2), 0)
    df = pd.DataFrame({
        "participation": np.where(works, "yes", "no"),
        "hours": hours.astype(int),
        "age": rng.integers(30, 61, 753),
        "kids": rng.integers(0, 4, 753),
    })
    cols = [
        {"name": "participation", "kind": "categorical", "domain": {"categories": ["no", "yes"]}},
        {"name": "hours", "kind": "continuous", "integer": True, "missing": True,
         "domain": {"bounds": {"lower": 0, "upper": 8760}}},
        {"name": "age", "kind": "continuous", "integer": True, "domain": {"bounds": {"lower": 30, "upper": 60}}},
        {"name": "kids", "kind": "continuous", "integer": True, "domain": {"bounds": {"lower": 0, "upper": 3}}},
    ]
    return "survey", df, cols, "hours"


def anes():
    import statsmodels.api as sm
    df = sm.datasets.anes96.load_pandas().data[["age", "income", "educ", "vote"]].copy()
    df["educ"] = df["educ"].astype(int).astype(str)
    df["vote"] = df["vote"].astype(int).astype(str)
    cols = [
        {"name": "age", "kind": "continuous", "integer": True, "missing": True,
         "domain": {"bounds": {"lower": 0, "upper": 120}}},
        {"name": "income", "kind": "continuous", "integer": True, "domain": {"bounds": {"lower": 0, "upper": 50}}},
        {"name": "educ", "kind": "categorical", "domain": {"categories": sorted(df["educ"].unique())}},
        {"name": "vote", "kind": "binary", "domain": {"categories": ["0", "1"]}},
    ]
    return "anes96", df, cols, "age"


def randhie():
    import statsmodels.api as sm
    df = sm.datasets.randhie.load_pandas().data[["mdvis", "lncoins", "idp", "physlm"]].head(2000).copy()
    df["idp"] = df["idp"].astype(int).astype(str)
    cols = [
        {"name": "mdvis", "kind": "continuous", "integer": True, "missing": True,
         "domain": {"bounds": {"lower": 0, "upper": 365}}},
        {"name": "lncoins", "kind": "continuous", "domain": {"bounds": {"lower": 0, "upper": 5}}},
        {"name": "idp", "kind": "binary", "domain": {"categories": ["0", "1"]}},
        {"name": "physlm", "kind": "continuous", "domain": {"bounds": {"lower": 0, "upper": 1}}},
    ]
    return "randhie", df, cols, "mdvis"


def run(bin_, args):
    subprocess.run([bin_] + args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main():
    out = sys.argv[1]
    seeds = range(1, 1 + int(sys.argv[2] if len(sys.argv) > 2 else 3))
    bin_ = os.environ.get("DPSYNTH", "dpsynth")
    os.makedirs(out, exist_ok=True)
    print("| table | column (public bound; real max) | method | noise floor | past the real max | blank |")
    print("|---|---|---|---|---|---|")
    for name, df, cols, col in [survey(), anes(), randhie()]:
        data = os.path.join(out, f"{name}.csv")
        df.to_csv(data, index=False)
        schema = os.path.join(out, f"{name}.schema.json")
        with open(schema, "w") as f:
            json.dump({"format": "dpsynth-schema/1", "columns": cols}, f)
        real_max = df[col].max()
        bound = next(c for c in cols if c["name"] == col)["domain"]["bounds"]["upper"]
        for method in ["mst", "aim"]:
            for floor in ["true", "false"]:
                past, blank = [], []
                for seed in seeds:
                    tag = f"{name}.{method}.{floor}.{seed}"
                    model = os.path.join(out, tag + ".dpsynth")
                    rows = os.path.join(out, tag + ".csv")
                    run(bin_, ["train", "--data", data, "--schema", schema, "--method", method,
                               "--preset", "quick", "--epsilon", "1", "--delta", "1e-6",
                               "--seed", str(seed), "--set", f"noise_floor={floor}",
                               "--ledger", os.path.join(out, tag + ".ledger.sqlite3"), "--out", model])
                    run(bin_, ["sample", "--model", model, "--rows", str(len(df)), "--seed", str(seed),
                               "--out", rows])
                    s = pd.read_csv(rows)[col]
                    past.append(float((s > real_max).mean()))
                    blank.append(float(s.isna().mean()))
                fmt = lambda v: f"{100 * np.mean(v):.1f} % (max {100 * np.max(v):.1f} %)"
                print(f"| {name} ({len(df)} rows) | {col} (0-{bound}; {real_max}) | {method} | "
                      f"{'on' if floor == 'true' else 'off'} | {fmt(past)} | {fmt(blank)} |", flush=True)


if __name__ == "__main__":
    main()
