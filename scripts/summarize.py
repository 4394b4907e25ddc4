#!/usr/bin/env python3
"""One line per run of scripts/compare.sh (or pgb_compare.sh): ε, seconds, RF / LR
accuracy and AUROC, the mean AUROC / AUPRC over every classifier (probability-based), the
mean 1-way total variation distance, the mean NIST 3-way marginal TV and the PCA
Wasserstein score."""
import glob, json, os, sys

out = sys.argv[1]
for f in sorted(glob.glob(os.path.join(out, "*.report.json"))):
    name = os.path.basename(f)[: -len(".report.json")]
    rows = {r["model"]: r["synthetic"].get("Ok", {}) for r in json.load(open(f))["tstr"]["rows"]}
    train = json.load(open(os.path.join(out, name + ".train.json")))
    ok = [r for r in rows.values() if "auroc" in r]
    mean = lambda k: sum(r[k] for r in ok) / max(len(ok), 1)
    g = lambda m, k: rows.get(m, {}).get(k, float("nan"))
    rep = json.load(open(f))
    hist = rep.get("histograms", [])
    tv = sum(h["tvd"] for h in hist) / max(len(hist), 1)
    pca = rep.get("pca", {}).get("wasserstein", {}).get("score", float("nan"))
    tv3 = rep.get("three_way", {}).get("mean_tv", float("nan"))
    print(
        f"{name:28s} ε={train['epsilon_spent']:.3f} {train['seconds']:5.0f}s "
        f"RF {g('random_forest','accuracy'):.3f}/{g('random_forest','auroc'):.3f} "
        f"LR {g('logistic_regression','accuracy'):.3f}/{g('logistic_regression','auroc'):.3f} "
        f"mean ROC {mean('auroc'):.3f} PRC {mean('auprc'):.3f} ({len(ok)} classifiers) "
        f"TV {tv:.3f} 3-way TV {tv3:.3f} PCA {pca:.3f}"
    )
