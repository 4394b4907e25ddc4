#!/usr/bin/env python3
"""A wide categorical table with known structure, and its public schema, for AIM on wide
tables (`scripts/wide_aim.sh`): column 0 is uniform; every later column copies a level of
an earlier "parent" column (chosen at random) with probability 0.7, else is uniform. Every
column has 2-6 levels named l0, l1, ...; the schema lists them all (public domains).

    python3 scripts/wide_table.py ROWS COLUMNS OUT.csv OUT.schema.json [SEED]
"""
import csv
import json
import random
import sys


def main():
    rows, cols, out, schema_out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
    rng = random.Random(int(sys.argv[5]) if len(sys.argv) > 5 else 1)
    levels = [rng.randint(2, 6) for _ in range(cols)]
    parent = [None] + [rng.randrange(j) for j in range(1, cols)]
    names = [f"c{j:03d}" for j in range(cols)]
    with open(out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(names)
        for _ in range(rows):
            row = []
            for j in range(cols):
                p = parent[j]
                if p is not None and rng.random() < 0.7:
                    v = row[p] % levels[j]
                else:
                    v = rng.randrange(levels[j])
                row.append(v)
            w.writerow(f"l{v}" for v in row)
    schema = {
        "format": "dpsynth-schema/1",
        "columns": [
            {
                "name": n,
                "kind": "categorical",
                "domain": {"categories": [f"l{k}" for k in range(levels[j])]},
                "provenance": "user_provided",
            }
            for j, n in enumerate(names)
        ],
    }
    with open(schema_out, "w") as f:
        json.dump(schema, f, indent=1)
    print(f"{out}: {rows} rows x {cols} columns; parents {parent[:8]}...")


if __name__ == "__main__":
    main()
