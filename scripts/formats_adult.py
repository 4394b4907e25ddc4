#!/usr/bin/env python3
"""The whole Adult training split (32,561 rows) saved as Excel, Parquet, SPSS and Stata by
independent writers, then, through dpsynth: each opens with the CSV's column kinds, trains
AIM, and charges the CSV's ledger entry (one dataset, whatever the format).

    pip install pandas openpyxl pyarrow pyreadstat
    python3 scripts/formats_adult.py [DPSYNTH_BINARY] [OUTDIR]

SPSS and Stata hold `sex` and `income` (Stata: `sex`, `race`) as labelled codes, as survey
files do; their value labels give the categories back. Names with `-` become `_` (neither
format allows `-`); the content digest compares names in a canonical form, so the files
still share one key. Prints a Markdown table and exits 1 if any check fails.
"""
import json
import os
import subprocess
import sys
import time

import pandas as pd
import pyreadstat

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
binary = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.environ.get("CARGO_TARGET_DIR", os.path.expanduser("~/.cache/dpsynth-target")), "release", "dpsynth")
out = sys.argv[2] if len(sys.argv) > 2 else "/tmp/dpsynth-formats-adult"
os.makedirs(out, exist_ok=True)
csv = os.path.join(root, "assets/adult/adult_train.csv")
ledger = os.path.join(out, "ledger.sqlite3")
if os.path.exists(ledger):
    os.remove(ledger)
env = dict(os.environ, DPSYNTH_LEDGER=ledger)

df = pd.read_csv(csv, na_values=["?"], skipinitialspace=True)
files = {"csv": csv}
t0 = time.time()
files["xlsx"] = os.path.join(out, "adult.xlsx")
df.to_excel(files["xlsx"], sheet_name="adult", index=False)
files["parquet"] = os.path.join(out, "adult.parquet")
df.to_parquet(files["parquet"], index=False)
renamed = df.rename(columns={c: c.replace("-", "_") for c in df.columns})
sp = renamed.copy()
sp["sex"] = sp["sex"].map({"Male": 1, "Female": 2}).astype(float)
sp["income"] = sp["income"].map({"<=50K": 1, ">50K": 2}).astype(float)
files["sav"] = os.path.join(out, "adult.sav")
pyreadstat.write_sav(sp, files["sav"], variable_value_labels={
    "sex": {1: "Male", 2: "Female"}, "income": {1: "<=50K", 2: ">50K"}})
st = renamed.copy()
st["sex"] = st["sex"].map({"Male": 1, "Female": 2}).astype(int)
codes = {n: i + 1 for i, n in enumerate(sorted(st["race"].unique()))}
st["race"] = st["race"].map(codes).astype(int)
for c in st.columns:
    if st[c].dtype == object or str(st[c].dtype) in ("str", "string"):
        st[c] = st[c].fillna("")
files["dta"] = os.path.join(out, "adult.dta")
pyreadstat.write_dta(st, files["dta"], version=15, variable_value_labels={
    "sex": {1: "Male", 2: "Female"}, "race": {v: k for k, v in codes.items()}})
print(f"wrote the files in {time.time() - t0:.0f} s", file=sys.stderr)


def run(*args):
    t = time.time()
    p = subprocess.run([binary, *args], env=env, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(args)}: exit {p.returncode}\n{p.stderr[-2000:]}")
    return p.stdout, time.time() - t


def canon(name):
    return "".join(ch if ch.isalnum() else "_" for ch in name.lower())


rows, failed = [], False
reference = None
for fmt, path in files.items():
    inspected, open_s = run("inspect", path, "--json")
    info = json.loads(inspected)
    kinds = {canon(c["name"]): c["kind"] for c in info["columns"]}
    if reference is None:
        reference = kinds
    same_kinds = kinds == reference
    trained, train_s = run("train", "--data", path, "--method", "aim", "--preset", "quick",
                           "--epsilon", "0.2", "--delta", "1e-5", "--public-kinds", "--estimate-domains",
                           "--out", os.path.join(out, f"adult-{fmt}.dpsynth"), "--json")
    budget = json.loads(run("budget", "show", "--data", path, "--json")[0])
    rows.append((fmt, info["rows"], same_kinds, open_s, train_s, budget["dataset"][:12],
                 budget["epsilon_spent"], len(budget["entries"])))
    failed |= not same_kinds or info["rows"] != 32561

print("| format | rows | kinds as the CSV's | inspect | AIM quick, ε = 0.2 (domains estimated) | ledger key | ε spent on the key after it | entries |")
print("|---|---|---|---|---|---|---|---|")
for fmt, n, same, o, t, key, spent, entries in rows:
    print(f"| {fmt} | {n} | {'yes' if same else 'NO'} | {o:.1f} s | {t:.1f} s | `{key}…` | {spent:.3f} | {entries} |")
keys = {r[5] for r in rows}
entries = [r[7] for r in rows]
shared = len(keys) == 1 and entries == sorted(entries) and entries[-1] == len(rows)
print(f"\none ledger key for every format: {'yes' if shared else 'NO'} ({len(keys)} key(s))")
sys.exit(1 if failed or not shared else 0)
