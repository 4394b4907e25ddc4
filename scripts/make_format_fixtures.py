#!/usr/bin/env python3
"""Writes tests/data/formats/ (see its README): Adult rows as Excel, ODS, Parquet, Arrow,
SPSS and Stata by independent writers, plus the broken files. Run from the repository root:
    pip install pandas openpyxl odfpy pyarrow pyreadstat msoffcrypto-tool
    python3 scripts/make_format_fixtures.py
"""
import os
import numpy as np
import openpyxl
import pandas as pd
import pyreadstat
from msoffcrypto.format.ooxml import OOXMLFile

out = "tests/data/formats"
os.makedirs(f"{out}/bad", exist_ok=True)
os.chdir(out)
lines = open("../../../assets/adult/adult_test.csv").read().splitlines()
open("adult_1k.csv", "w").write("\n".join(lines[:1001]) + "\n")
df = pd.read_csv("adult_1k.csv", na_values=["?"], skipinitialspace=True)

with pd.ExcelWriter("adult_1k.xlsx", engine="openpyxl") as w:
    df.to_excel(w, sheet_name="adult", index=False)
    df.head(50).to_excel(w, sheet_name="titled", index=False, startrow=2)
wb = openpyxl.load_workbook("adult_1k.xlsx")
wb["titled"]["A1"] = "Adult census extract, first 50 rows"
wb.save("adult_1k.xlsx")
# A linked pair as two sheets of one workbook: the first 400 persons of the bundled panel
# and their years.
persons = pd.read_csv("../../../assets/gsoep/persons_train.csv").head(400)
years = pd.read_csv("../../../assets/gsoep/years_train.csv")
years = years[years["id"].isin(persons["id"])]
with pd.ExcelWriter("panel.xlsx", engine="openpyxl") as w:
    persons.to_excel(w, sheet_name="persons", index=False)
    years.to_excel(w, sheet_name="years", index=False)
# Dates and times as Parquet types (a warehouse's export), with the same rows as pandas
# writes them to CSV.
import datetime as dt
import pyarrow as pa
import pyarrow.parquet as pq
n = 40
when = [dt.datetime(2024, 3, 1, 10, 0) + dt.timedelta(minutes=37 * i, milliseconds=250 * (i % 3)) for i in range(n)]
day = [dt.date(2024, 1, 1) + dt.timedelta(days=i % 17) for i in range(n)]
visits = [i % 6 for i in range(n)]
pq.write_table(pa.table({"day": pa.array(day, pa.date32()),
                         "when": pa.array(when, pa.timestamp("us")),
                         "visits": pa.array(visits, pa.int64())}), "dates.parquet")
pd.DataFrame({"day": day, "when": when, "visits": visits}).to_csv("dates.csv", index=False)
df.to_excel("adult_1k.ods", engine="odf", index=False)
df.to_parquet("adult_1k.parquet", index=False)
df.to_feather("adult_1k.arrow")

renamed = df.rename(columns={c: c.replace("-", "_") for c in df.columns})
sp = renamed.copy()
sp["sex"] = sp["sex"].map({"Male": 1, "Female": 2}).astype(float)
sp["income"] = sp["income"].map({"<=50K": 1, ">50K": 2}).astype(float)
pyreadstat.write_sav(
    sp, "adult_1k.sav",
    variable_value_labels={"sex": {1: "Male", 2: "Female"},
                           "income": {1: "<=50K", 2: ">50K", 9: "not asked"}},
    missing_ranges={"income": [9]})

st = renamed.copy()
st["sex"] = st["sex"].map({"Male": 1, "Female": 2}).astype(int)
codes = {n: i + 1 for i, n in enumerate(sorted(st["race"].unique()))}
st["race"] = st["race"].map(codes).astype(int)
for c in st.columns:
    if st[c].dtype == object or str(st[c].dtype) in ("str", "string"):
        st[c] = st[c].fillna("")
pyreadstat.write_dta(st, "adult_1k.dta", version=15,
                     variable_value_labels={"sex": {1: "Male", 2: "Female"},
                                            "race": {v: k for k, v in codes.items()}})

sv = pd.DataFrame({"age": [23, 35, 47, 51, 62, 29, 33, 41] * 5, "vote": [1, 2, 1, 9, 2, 1, 8, 2] * 5})
pyreadstat.write_sav(sv, "survey.sav",
                     variable_value_labels={"vote": {1: "Yes", 2: "No", 3: "Undecided", 8: "Don't know", 9: "Refused"}},
                     missing_ranges={"vote": [{"lo": 8, "hi": 9}]})
df.head(200).to_csv("adult_200.tsv", sep="\t", index=False)
eu = pd.DataFrame({"height_m": ["1,72", "1,65", "1,80", "1,59"] * 5,
                   "weight": ["70,5", "58", "82,25", "49,0"] * 5,
                   "town": ["Gent", "Brugge", "Gent", "Lier"] * 5})
open("european.csv", "w").write(eu.to_csv(sep=";", index=False))
small = pd.DataFrame({"age": [23, 35, 47], "vote": [1, 2, 9]})
pyreadstat.write_dta(small, "small.dta", variable_value_labels={"vote": {1: "Yes", 2: "No"}})
small.to_parquet("small.parquet", index=False)
small.to_feather("small.arrow", compression="uncompressed")
pd.DataFrame({"age": [23, 35, 47, 51], "town": ["Gent", "Lier", "Gent", "Aalst"]}).to_excel("small.xlsx", index=False)

for ext in ["xlsx", "parquet", "sav", "dta"]:
    b = open(f"adult_1k.{ext}", "rb").read()
    open(f"bad/truncated.{ext}", "wb").write(b[: len(b) // 2])
wb = openpyxl.Workbook()
wb.active.title = "empty"
wb.save("bad/empty_sheet.xlsx")
wb = openpyxl.Workbook()
ws = wb.active
ws.append(["region", "sales"])
for r in [["North", 1], ["North", 2], ["South", 3], ["South", 4]]:
    ws.append(r)
ws.merge_cells("A2:A3")
wb.save("bad/merged.xlsx")
with open("adult_1k.xlsx", "rb") as f, open("bad/protected.xlsx", "wb") as g:
    OOXMLFile(f).encrypt("secret", g)
