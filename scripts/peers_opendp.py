#!/usr/bin/env python3
"""One OpenDP AIM or MST run (opendp.extras.mbi, Private-PGM) with dpsynth's public domain,
for scripts/peers.sh: the schema's categories as keys and 32 uniform bins of its bounds as
cuts (no privacy spent on the domain: it is public, as dpsynth's), fit on TRAIN at (ε, δ)
through zero-concentrated DP (ρ from ε and δ by ε = ρ + 2·sqrt(ρ·ln(1/δ)), the conversion
AIM's paper and dpsynth's zCDP path use), draw as many rows, write them as CSV, print one
JSON line with the seconds to fit and to generate.

    python3 scripts/peers_opendp.py aim|mst TRAIN SCHEMA EPSILON DELTA BINS OUT.csv
"""
import json
import math
import sys
import time

import opendp.prelude as dp
import polars as pl

dp.enable_features("contrib")


def rho_of(eps, delta):
    # ε = ρ + 2 sqrt(ρ ln(1/δ)) solved for ρ (a quadratic in sqrt(ρ)).
    l = math.log(1 / delta)
    r = -math.sqrt(l) + math.sqrt(l + eps)
    return r * r


def main():
    method, train, schema, eps, delta, bins, out = sys.argv[1:8]
    eps, delta, bins = float(eps), float(delta), int(bins)
    spec = json.load(open(schema))["columns"]
    df = pl.read_csv(train, infer_schema_length=0)
    keep, keys, cuts, casts = [], {}, {}, []
    for c in spec:
        name, kind = c["name"], c["kind"]
        if kind == "ignored":
            continue
        keep.append(name)
        text = pl.col(name).str.strip_chars()
        text = pl.when(text.is_in(["?", ""])).then(None).otherwise(text)
        d = c.get("domain", {})
        if kind == "continuous":
            b = d["bounds"]
            lo, hi = float(b["lower"]), float(b["upper"])
            cuts[name] = [lo + (hi - lo) * k / bins for k in range(1, bins)]
            casts.append(text.cast(pl.Float64).clip(lo, hi).alias(name))
        else:
            keys[name] = [str(x) for x in d.get("categories", ["0", "1"])]
            casts.append(text.alias(name))
    df = df.select(casts)
    algorithm = {"aim": dp.mbi.AIM, "mst": dp.mbi.MST}[method]()
    # Rounded down to 6 digits: OpenDP splits ρ among its steps in floating point, and
    # some values leave a step one ulp short of its share ("insufficient budget").
    rho = math.floor(rho_of(eps, delta) * 1e6) / 1e6
    t0 = time.time()
    context = dp.Context.compositor(
        data=df.lazy(),
        privacy_unit=dp.unit_of(contributions=1),
        privacy_loss=dp.loss_of(rho=rho),
        split_evenly_over=1,
        margins=[dp.polars.Margin(max_length=len(df))],
    )
    table = (
        context.query()
        .select(keep)
        .contingency_table(keys=keys, cuts=cuts, algorithm=algorithm)
        .release()
    )
    fit = time.time() - t0
    t0 = time.time()
    synth = table.synthesize(rows=len(df))
    gen = time.time() - t0
    synth.write_csv(out)
    print(json.dumps({"peer": f"opendp {method}", "rho": rho, "fit_seconds": fit, "generate_seconds": gen}))


if __name__ == "__main__":
    main()
