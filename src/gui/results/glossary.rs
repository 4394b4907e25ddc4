//! One line of plain words per metric and privacy term the results show, for an analyst
//! who has not met them: the window attaches them as tooltips wherever the term appears.

/// The explanation of `term` (a column header or row name as shown), if it has one.
pub(super) fn explain(term: &str) -> Option<&'static str> {
    let t = term.to_ascii_lowercase();
    let has = |k: &str| t.contains(k);
    Some(
        if has("auroc") || has("membership auc") || has("membership-inference auc") {
            if has("membership") {
                "How well an attacker who sees the synthetic rows can tell training rows from unseen real rows: 0.5 is guessing, 1 is certain. Near 0.5 is good."
            } else {
                "Area under the ROC curve: the chance the classifier ranks a random positive above a random negative. 0.5 is guessing, 1 is perfect."
            }
        } else if has("auprc") {
            "Area under the precision–recall curve: how precise the classifier stays as it finds more of the rarer class. Its floor is that class's share."
        } else if has("accuracy") {
            "The share of real held-out rows the classifier labels correctly. Compare with always guessing the most common class."
        } else if has("pmse") {
            "Propensity mean squared error: how well a classifier tells real from synthetic rows. 0 means it cannot tell them apart."
        } else if has("mmd") {
            "Maximum mean discrepancy: a kernel distance between the real and synthetic rows as wholes. 0 means the same distribution."
        } else if has("1-way tv") || has("total variation") {
            "Total variation distance between a column's real and synthetic histograms, averaged over columns: 0 is identical, 1 disjoint."
        } else if has("wasserstein") || has("pca score") {
            "How close the synthetic cloud lies to the real one on the real data's first two principal components (1 = they coincide). Collapsed data can still score well here: look at the histograms too."
        } else if has("distance") && has("closest") {
            "How far each synthetic row is from its nearest training row, beside the same for real rows the model never saw. Much closer than unseen rows suggests copying."
        } else if has("identical") {
            "Synthetic rows equal to some training row in every column. A few can happen by chance on coarse data; many suggest memorisation."
        } else if has("|real − synthetic|") || has("dimension-wise") {
            "For each column, a model is trained to predict it from the others, once on real and once on synthetic rows; the gap in their scores on real rows."
        } else if has("rdp") || has("pld") {
            "Two ways of adding up privacy loss over many noisy steps: Rényi DP (RDP) and the privacy-loss distribution (PLD). PLD is tighter; the statement uses the smaller ε."
        } else {
            return None;
        },
    )
}

/// A metric's name as the report writes it (`f1_macro`, `r2`, …) in plain words.
pub(super) fn plain_metric(metric: &str) -> &str {
    match metric {
        "auroc" => "AUROC (ranking, 0.5 = guessing)",
        "f1_macro" => "F1, every class weighed the same",
        "f1_micro" => "F1, every row weighed the same",
        "r2" => "R² (share of the variation explained)",
        other => other,
    }
}

/// The accountant a statement names, in plain words.
pub(super) fn plain_accountant(name: &str) -> &str {
    match name {
        "pld+rdp" => {
            "privacy-loss-distribution accountant for the noisy counts and sums, Rényi-DP accountant for the rest, added up"
        }
        "pld" => "privacy-loss-distribution (PLD) accountant",
        "rdp" => "Rényi-DP (RDP) accountant",
        "pld (plan mark)" => "privacy-loss-distribution accountant, at the plan's nearest mark",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    /// The raw names have their plain lines.
    #[test]
    fn raw_names_read_plainly() {
        for m in ["auroc", "f1_macro", "f1_micro", "r2"] {
            assert_ne!(super::plain_metric(m), m);
        }
        for a in ["pld+rdp", "pld", "rdp"] {
            assert!(super::plain_accountant(a).contains("accountant"));
        }
    }

    /// Every metric header the results tables show has a line; unknown words have none.
    #[test]
    fn every_shown_metric_is_explained() {
        for term in [
            "AUROC",
            "AUPRC",
            "real: accuracy",
            "best TSTR accuracy",
            "membership AUC",
            "membership-inference AUC (0.5 = no signal)",
            "pMSE (0 = indistinguishable)",
            "MMD² (unbiased)",
            "mean 1-way TV",
            "PCA Wasserstein score",
            "synthetic rows identical to a training row",
            "median distance to the closest training row: synthetic / unseen real",
            "mean |real − synthetic| (dimension-wise, floored at −0.1)",
        ] {
            assert!(super::explain(term).is_some(), "{term}");
        }
        assert!(
            super::explain("membership AUC")
                .unwrap()
                .contains("attacker")
        );
        assert!(super::explain("run").is_none());
    }
}
