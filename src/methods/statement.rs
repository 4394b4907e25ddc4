//! What every method releases: the model header with its privacy statement. One builder
//! for all methods (the GANs, the embedding methods, the marginal methods and boosting),
//! so that a statement says the same things in the same words whichever method made it.

use super::released::{MODEL_FORMAT, ModelHeader, PrivacyStatement, ReleasedModel};
use super::{Result, TrainSetup};
use crate::nn::layers::Net;

/// Which accountants a release's statement runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Accounting {
    /// RDP and PLD, reporting the tighter: the final model.
    Best,
    /// The whole reserved plan, whatever part of it has run: the per-epoch checkpoints.
    /// A checkpoint is released while the run goes on spending on the same rows, and the
    /// ledger holds the plan's ε for it; stamping the prefix's smaller figure would let a
    /// file claim less than the rows behind it were charged. Without a plan (never the case
    /// for a run the job reserved), the accountant's cheap upper bound of what was spent.
    Plan,
}

/// The method name a model file carries: a `dp-…` method trained at ε = ∞ is not that
/// method, and its file must not read as if it were (`dp-auto-gan` → `auto-gan
/// (non-private)`).
fn released_name(method: &str, private: bool) -> String {
    match method.strip_prefix("dp-") {
        Some(rest) if !private => format!("{rest} (non-private)"),
        _ => method.to_string(),
    }
}

/// The privacy statement of what `accountant` has charged so far.
pub(crate) fn statement(
    accountant: &crate::privacy::Accountant,
    accounting: Accounting,
    private: bool,
    schema: &crate::data::schema::Schema,
    seeded_by_user: bool,
) -> PrivacyStatement {
    let plan = (private && accounting == Accounting::Plan)
        .then(|| accountant.plan().zip(accountant.plan_epsilon()))
        .flatten();
    let (eps, acc_name, eps_rdp, eps_pld) = if let Some((_, whole)) = plan {
        let name = format!("{} (the whole run's plan)", whole.by.name());
        (Some(whole.epsilon), name, Some(whole.rdp), whole.pld)
    } else if private && accounting == Accounting::Plan {
        let rdp = accountant.spent().epsilon;
        let quick = accountant.spent_upper();
        let name = if quick < rdp {
            "pld (plan mark)"
        } else {
            "rdp"
        };
        (Some(quick), name.to_string(), Some(rdp), None)
    } else if private {
        let rdp = accountant.spent().epsilon;
        let pld = accountant.spent_pld();
        let (best, name) = accountant.spent_best();
        (Some(best), name.to_string(), Some(rdp), pld)
    } else {
        (None, "none".to_string(), None, None)
    };
    PrivacyStatement {
        epsilon: eps,
        delta: accountant.budget().delta,
        accountant: acc_name,
        epsilon_rdp: eps_rdp,
        epsilon_pld: eps_pld,
        mechanisms: plan.map_or_else(|| accountant.history().to_vec(), |(p, _)| p.to_vec()),
        non_private_domains: schema
            .non_private_domains()
            .iter()
            .map(|c| c.to_string())
            .collect(),
        non_private_kinds: schema
            .non_private_kinds()
            .iter()
            .map(|c| c.to_string())
            .collect(),
        dropped_columns: schema
            .dropped_by_estimate()
            .iter()
            .map(|c| c.to_string())
            .collect(),
        not_for_release: seeded_by_user,
        public_rows: None,
        counted_by: None,
        rules: schema.rules.clone(),
        point_masses: point_masses(schema),
    }
}

/// Each column's exact values for the statement: "hours (0; named by the rules: 0)",
/// with those a private estimate found marked as such.
fn point_masses(schema: &crate::data::schema::Schema) -> Vec<String> {
    schema
        .columns
        .iter()
        .filter(|c| !c.point_masses.is_empty())
        .map(|c| {
            let v: Vec<String> = c.point_masses.iter().map(|p| c.show_value(*p)).collect();
            let how = if c.point_masses_estimated {
                ESTIMATED_MASSES
            } else {
                ""
            };
            let ruled: Vec<String> = c
                .point_masses
                .iter()
                .filter(|p| crate::data::rules::is_named(schema, &c.name, **p))
                .map(|p| c.show_value(*p))
                .collect();
            let ruled = if ruled.is_empty() {
                String::new()
            } else {
                format!("{RULED_MASSES}{}", ruled.join(", "))
            };
            format!("{} ({}{ruled}{how})", c.name, v.join(", "))
        })
        .collect()
}

/// How the statement marks a column's point masses that a private estimate found (the
/// others were named by the user).
pub const ESTIMATED_MASSES: &str = "; estimated privately with the domain";
/// How the statement marks the point masses a rule names (`hours = 0`): public by the
/// rule, held exactly so the rule is kept by the model rather than by dropping rows.
pub const RULED_MASSES: &str = "; named by the rules: ";

/// Builds the released model: the generator and the privacy statement.
#[allow(clippy::too_many_arguments)]
pub(crate) fn release(
    s: &TrainSetup<'_>,
    accounting: Accounting,
    private: bool,
    method: &str,
    preset: &str,
    latent_dim: usize,
    generator: Net,
    config: serde_json::Value,
) -> Result<ReleasedModel> {
    let schema = s.encoding.schema.clone();
    let header = ModelHeader {
        format: MODEL_FORMAT.into(),
        method: released_name(method, private),
        preset: preset.into(),
        library_version: env!("CARGO_PKG_VERSION").into(),
        latent_dim,
        generator: generator.spec()?,
        privacy: statement(
            s.accountant,
            accounting,
            private,
            &schema,
            s.noise.seeded_by_user,
        ),
        schema,
        config,
        conditioning: None,
        mixture: None,
        graphical: None,
        labeller: None,
    };
    Ok(ReleasedModel {
        header,
        generator,
        mixture: None,
        graphical: None,
        labeller: None,
    })
}
