#!/usr/bin/env python3
"""One dpmm run (MST or AIM) with dpsynth's public domain, for scripts/peers.sh: fit on
TRAIN at (ε, δ) with uniform bins of the schema's bounds (no privacy spent on binning: the
domain is public, as dpsynth's), draw as many rows, write them as CSV, print one JSON line
with the seconds to fit and to generate.

    python3 scripts/peers_dpmm.py mst|aim TRAIN SCHEMA EPSILON DELTA BINS OUT.csv
"""
import json
import sys
import time

import pandas as pd
from dpmm.pipelines import AIMPipeline, MSTPipeline


def main():
    method, train, schema, eps, delta, bins, out = sys.argv[1:8]
    spec = json.load(open(schema))["columns"]
    df = pd.read_csv(train, skipinitialspace=True, na_values=["?"])
    domain, keep = {}, []
    for c in spec:
        name, kind = c["name"], c["kind"]
        if kind == "ignored":
            continue
        keep.append(name)
        d = c.get("domain", {})
        if kind == "continuous":
            b = d["bounds"]
            domain[name] = {"lower": b["lower"], "upper": b["upper"]}
            df[name] = df[name].astype(float)
        else:
            cats = d.get("categories", ["0", "1"])
            domain[name] = {"categories": cats}
            df[name] = df[name].astype("string").str.strip()
    df = df[keep]
    pipeline = {"mst": MSTPipeline, "aim": AIMPipeline}[method](
        epsilon=float(eps),
        delta=float(delta),
        binner_type="uniform",
        proc_epsilon=None,
        n_bins=int(bins),
    )
    t0 = time.time()
    pipeline.fit(df, domain, public=False)
    fit = time.time() - t0
    t0 = time.time()
    synth = pipeline.generate(n_records=len(df))
    gen = time.time() - t0
    synth.to_csv(out, index=False)
    print(json.dumps({"peer": f"dpmm {method}", "fit_seconds": fit, "generate_seconds": gen}))


if __name__ == "__main__":
    main()
