//! The schema's rules as structural zeros of MST's and AIM's graphical model: the cells of
//! the discrete domain that no lawful row can fill get no mass, so the fit spends none of
//! the data's weight there and sampling never draws them.
//!
//! A rule over a few columns ([`rules::surely_broken`] on each cell of their joint) puts
//! those columns in one node of the model and forbids the cells where every value breaks
//! it. A cell where only some values break it (a bin of gains that holds 0 and 1–999) stays
//! open; its unlawful rows are repaired or dropped at sampling as before. A `->` rule's
//! map, when the rule gives one (a codebook's), forbids every other pair of its levels
//! from the start; for the left values it does not list, once the model is fitted to the
//! noisy marginals each keeps only the right value the model favours, and a last fit
//! keeps that map.
//!
//! All of it is post-processing of noisy measurements and public facts (the rules, the
//! domain): no charge. Rules on a number or binary column that may be blank are left to
//! sampling (a blank row's hidden level is no value, and forbidding it would bend the fit).

use crate::data::rules::{self, Rule, Span};
use crate::data::schema::{ColumnSpec, Kind, Schema};

use super::one_to_one;
use super::pgm::domain::{Coding, Domain};
use super::pgm::estimate::{Estimate, Measurement, Zeros};
use super::pgm::factor::strides;
use super::pgm::junction::JunctionTree;
use super::{MethodError, Result};

/// Most cells of one rule's joint that are checked; a rule over a larger joint is left
/// to sampling.
const MAX_RULE_CELLS: usize = 1 << 20;

/// What the rules ask of the model.
#[derive(Debug, Clone, Default)]
pub(crate) struct Structural {
    /// Attribute sets the model must hold in one node, one per rule kept here.
    pub cliques: Vec<Vec<usize>>,
    zeros: Vec<Zeros>,
    /// `->` rules: the left and right attributes, and for each, which levels are blank
    /// slots (left open by the map).
    determines: Vec<Determined>,
}

#[derive(Debug, Clone)]
struct Determined {
    left: usize,
    right: usize,
    left_open: Vec<bool>,
    right_open: Vec<bool>,
    /// The right level of each left level when the map is known (a one-to-one pair read
    /// off the noisy counts); `None`: the fitted model's favourite (a rule's).
    map: Option<Vec<Option<usize>>>,
    /// The right level the rule's own map gives each left level (a public fact), where it
    /// lists one; empty when the rule gives no map.
    given: Vec<Option<usize>>,
}

impl Structural {
    /// The zeros of every rule of `schema` that the domain can hold.
    pub(crate) fn of(schema: &Schema, domain: &Domain) -> Result<Self> {
        let stated = rules::of_schema(schema).map_err(|e| MethodError::Plan(e.to_string()))?;
        let mut out = Self::default();
        for r in &stated {
            let Some(attrs) = attributes(&r.rule, schema, domain) else {
                continue;
            };
            if let Rule::Determines { left, right, map } = &r.rule {
                let (Some(l), Some(x)) = (attr(domain, left), attr(domain, right)) else {
                    continue;
                };
                let given = given_levels(schema, domain, (l, x), map);
                if !given.is_empty() {
                    // Known before any fit: its zeros hold from the first model on.
                    out.zeros.push(given_zeros(domain, (l, x), &given));
                }
                let open = |a: usize| {
                    (0..domain.attributes[a].size)
                        .map(|k| span(schema, domain, a, k) == Span::Any)
                        .collect()
                };
                out.determines.push(Determined {
                    left: l,
                    right: x,
                    left_open: open(l),
                    right_open: open(x),
                    map: None,
                    given,
                });
                out.add_clique(attrs);
                continue;
            }
            let forbidden = forbidden_cells(&r.rule, schema, domain, &attrs);
            if !forbidden.iter().any(|f| *f) {
                continue;
            }
            out.add_clique(attrs.clone());
            // Rules over the same columns share one table of zeros.
            match out.zeros.iter_mut().find(|z| z.attrs == attrs) {
                Some(z) => z
                    .forbidden
                    .iter_mut()
                    .zip(&forbidden)
                    .for_each(|(a, b)| *a |= b),
                None => out.zeros.push(Zeros { attrs, forbidden }),
            }
        }
        Ok(out)
    }

    fn add_clique(&mut self, attrs: Vec<usize>) {
        if !self.cliques.contains(&attrs) {
            self.cliques.push(attrs);
        }
    }

    /// The rules' zeros (what a noise floor is added to).
    pub(crate) fn zeros(&self) -> &[Zeros] {
        &self.zeros
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.cliques.is_empty() && self.determines.is_empty()
    }

    /// Keeps the pairs the noisy `measured` counts show one-to-one as one-to-one maps; a
    /// `->` rule over the same pair takes the map too (it is the rule's, and read off the
    /// counts rather than the fitted model, which noise can bend). Returns the pairs kept,
    /// as attribute indices. Call before the maps are fixed.
    pub(crate) fn keep_one_to_one(
        &mut self,
        measured: &[Measurement],
        sizes: &[usize],
    ) -> Vec<(usize, usize)> {
        let mut kept = Vec::new();
        for p in one_to_one::found(measured, sizes) {
            let stated = self.determines.iter().any(|d| {
                !d.given.is_empty()
                    && ((d.left, d.right) == (p.left, p.right)
                        || (d.left, d.right) == (p.right, p.left))
            });
            if stated {
                // The rule's own map is a public fact; the counts' reading gives way.
                continue;
            }
            self.determines.retain(|d| {
                (d.left, d.right) != (p.left, p.right) && (d.left, d.right) != (p.right, p.left)
            });
            kept.push((p.left, p.right));
            self.determines.push(Determined {
                left: p.left,
                right: p.right,
                left_open: p.map.iter().map(Option::is_none).collect(),
                right_open: p.right_open,
                map: Some(p.map),
                given: Vec::new(),
            });
        }
        kept
    }

    /// A first model: every column alone and the rules' nodes, with their zeros, on
    /// `total` rows. Returns its nodes too, for the trees grown from it.
    pub(crate) fn start(&self, sizes: &[usize], total: f64) -> (Vec<Vec<usize>>, Estimate) {
        let mut cliques: Vec<Vec<usize>> = (0..sizes.len()).map(|a| vec![a]).collect();
        cliques.extend(self.cliques.iter().cloned());
        let mut est = Estimate::new(sizes, JunctionTree::build(sizes, &cliques), total);
        if !self.zeros.is_empty() {
            est.set_zeros(self.zeros.clone());
        }
        (cliques, est)
    }

    /// The `->` maps fixed from the fitted `est`, then `iters` more steps on `measured`
    /// that keep them (nothing when there is no rule).
    pub(crate) fn settle(
        &self,
        est: &mut Estimate,
        domain: &Domain,
        measured: &[Measurement],
        iters: usize,
    ) {
        if !self.is_empty() {
            self.fix_determined(est, domain);
            est.fit(measured, iters);
        }
    }

    /// Fixes every `->` rule's map from the fitted `est`: each left level keeps the right
    /// level with the most mass (a one-to-one pair keeps the map its noisy counts showed).
    /// Call once the model holds every measurement, then fit again.
    pub(crate) fn fix_determined(&self, est: &mut Estimate, domain: &Domain) {
        if self.determines.is_empty() {
            return;
        }
        let sizes = domain.sizes();
        let mut zeros = est.zeros().to_vec();
        for d in &self.determines {
            let (l, x) = (d.left, d.right);
            let mut attrs = vec![l, x];
            attrs.sort_unstable();
            let Some(mass) = est.project(&attrs) else {
                continue;
            };
            let st = strides(&sizes, &attrs);
            let (sl, sx) = if attrs[0] == l {
                (st[0], st[1])
            } else {
                (st[1], st[0])
            };
            let at = |li: usize, xi: usize| li * sl + xi * sx;
            let mut forbidden = vec![false; mass.len()];
            if let Some(map) = &d.map {
                // One-to-one: a matched level shares no row with any other level, matched
                // or not; only two unmatched levels may meet.
                for li in 0..sizes[l] {
                    for xi in 0..sizes[x] {
                        let matched = map[li].is_some() || !d.right_open[xi];
                        forbidden[at(li, xi)] = matched && map[li] != Some(xi);
                    }
                }
            } else {
                for li in (0..sizes[l]).filter(|k| !d.left_open[*k]) {
                    let values = (0..sizes[x]).filter(|k| !d.right_open[*k]);
                    let favourite =
                        values.max_by(|a, b| mass[at(li, *a)].total_cmp(&mass[at(li, *b)]));
                    let best = d.given.get(li).copied().flatten().or(favourite);
                    for xi in (0..sizes[x]).filter(|k| !d.right_open[*k] && Some(*k) != best) {
                        forbidden[at(li, xi)] = true;
                    }
                }
            }
            zeros.push(Zeros { attrs, forbidden });
        }
        est.set_zeros(zeros);
    }
}

/// For each level of attribute `l`, the level of `x` the rule's map gives it (empty when
/// the rule gives no map, or none of its pairs is a level of each).
fn given_levels(
    schema: &Schema,
    domain: &Domain,
    (l, x): (usize, usize),
    map: &[(rules::Value, rules::Value)],
) -> Vec<Option<usize>> {
    if map.is_empty() {
        return Vec::new();
    }
    let level_of = |a: usize, v: &rules::Value| -> Option<usize> {
        let spec = schema.column(&domain.attributes[a].name)?;
        let level = rules::level_in(spec, v).map(|s| Span::Level(s.to_string()));
        let number = rules::number_in(spec, v);
        (0..domain.attributes[a].size).find(|k| match span(schema, domain, a, *k) {
            Span::Range { lo, hi } => lo == hi && Some(lo) == number,
            s => Some(s) == level,
        })
    };
    let mut out = vec![None; domain.attributes[l].size];
    for (k, v) in map {
        if let (Some(lk), Some(xk)) = (level_of(l, k), level_of(x, v)) {
            out[lk] = Some(xk);
        }
    }
    if out.iter().all(Option::is_none) {
        return Vec::new();
    }
    out
}

/// The cells a given map forbids: each listed left level with any right level but its own.
fn given_zeros(domain: &Domain, (l, x): (usize, usize), given: &[Option<usize>]) -> Zeros {
    let sizes = domain.sizes();
    let mut attrs = vec![l, x];
    attrs.sort_unstable();
    let st = strides(&sizes, &attrs);
    let (sl, sx) = if attrs[0] == l {
        (st[0], st[1])
    } else {
        (st[1], st[0])
    };
    let mut forbidden = vec![false; sizes[l] * sizes[x]];
    for (li, to) in given.iter().enumerate() {
        let Some(to) = to else { continue };
        for xi in (0..sizes[x]).filter(|k| k != to) {
            forbidden[li * sl + xi * sx] = true;
        }
    }
    Zeros { attrs, forbidden }
}

/// The domain's attribute of a schema column (its values, not its missing indicator).
fn attr(domain: &Domain, column: &str) -> Option<usize> {
    domain.attributes.iter().position(|a| a.name == column)
}

/// The sorted attributes a rule reads, or `None` when it is left to sampling.
fn attributes(rule: &Rule, schema: &Schema, domain: &Domain) -> Option<Vec<usize>> {
    let mut attrs = Vec::new();
    for c in rule.columns() {
        let spec = schema.column(c)?;
        // A blank number or binary value is a separate indicator; its value level is
        // then no value at all. (A categorical column's blank is a level of its own.)
        if spec.kind == Kind::Ignored || (spec.kind != Kind::Categorical && spec.missing) {
            return None;
        }
        let a = attr(domain, &spec.name)?;
        if !attrs.contains(&a) {
            attrs.push(a);
        }
    }
    attrs.sort_unstable();
    (domain.cells(&attrs) <= MAX_RULE_CELLS).then_some(attrs)
}

/// For each cell of the joint over `attrs`, whether every row in it breaks `rule`.
fn forbidden_cells(rule: &Rule, schema: &Schema, domain: &Domain, attrs: &[usize]) -> Vec<bool> {
    let sizes = domain.sizes();
    let n = domain.cells(attrs);
    let st = strides(&sizes, attrs);
    (0..n)
        .map(|cell| {
            let span_of = |column: &str| {
                attrs
                    .iter()
                    .zip(&st)
                    .find(|(a, _)| domain.attributes[**a].name == column)
                    .map_or(Span::Any, |(a, s)| {
                        span(schema, domain, *a, (cell / s) % sizes[*a])
                    })
            };
            rules::surely_broken(rule, schema, &span_of)
        })
        .collect()
}

/// The values level `k` of attribute `a` decodes to.
fn span(schema: &Schema, domain: &Domain, a: usize, k: usize) -> Span {
    let at = &domain.attributes[a];
    let Some(spec) = schema.column(&at.name) else {
        return Span::Any;
    };
    match &at.coding {
        Coding::OneHot { .. } | Coding::Flag { .. } => match spec.categories() {
            Some(c) if k < c.len() => Span::Level(c[k].clone()),
            _ => Span::Any,
        },
        Coding::Integers { first, .. } => {
            let v = first + k as f64;
            Span::Range { lo: v, hi: v }
        }
        Coding::Bins { points, .. } => {
            let n_points = points.as_ref().map_or(0, |p| p.scaled.len());
            let bins = at.size.saturating_sub(n_points).max(1);
            if k >= bins {
                return match spec.point_masses.get(k - bins) {
                    Some(p) => Span::Range { lo: *p, hi: *p },
                    None => Span::Any,
                };
            }
            bin_range(spec, k, bins)
        }
    }
}

/// The values bin `k` of `bins` decodes to: its share of the public bounds, widened by
/// the rounding to whole numbers or the column's decimals, inside the bounds.
fn bin_range(spec: &ColumnSpec, k: usize, bins: usize) -> Span {
    let Some((lower, upper)) = spec.bounds() else {
        return Span::Any;
    };
    let w = (upper - lower) / bins as f64;
    let (mut lo, mut hi) = (lower + k as f64 * w, lower + (k + 1) as f64 * w);
    if spec.integer {
        (lo, hi) = (lo.floor(), hi.ceil());
    } else if let Some(d) = spec.decimals {
        let step = 10f64.powi(d as i32);
        (lo, hi) = ((lo * step).floor() / step, (hi * step).ceil() / step);
    }
    let (mut lo, mut hi) = (lo.max(lower), hi.min(upper));
    // A value that is a point mass is encoded in its own slot, never in a bin: a bin whose
    // edge is one (hours in [0, 50) beside the point 0) holds only the values past it, so
    // `… => hours = 0` surely fails there and `hours > 0` surely holds.
    let past = |x: f64, up: bool| match (spec.integer, up) {
        (true, true) => x + 1.0,
        (true, false) => x - 1.0,
        (false, true) => x.next_up(),
        (false, false) => x.next_down(),
    };
    if spec.point_mass_of(lo).is_some() && past(lo, true) <= hi {
        lo = past(lo, true);
    }
    if spec.point_mass_of(hi).is_some() && past(hi, false) >= lo {
        hi = past(hi, false);
    }
    Span::Range { lo, hi }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::encode::Encoding;
    use crate::methods::pgm::GraphicalModel;
    use crate::methods::pgm::factor::count;
    use rand::{Rng, SeedableRng};

    fn adult() -> (Schema, Domain) {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/adult/");
        let mut schema = Schema::load(std::path::Path::new(&format!("{dir}adult.schema.json")))
            .expect("the bundled schema");
        let text = std::fs::read_to_string(format!("{dir}adult.rules")).expect("the rules");
        schema.rules = text
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
            .map(str::to_string)
            .collect();
        let domain = Domain::of_encoding(&Encoding::new(&schema).unwrap(), 100).unwrap();
        (schema, domain)
    }

    fn level(schema: &Schema, column: &str, value: &str) -> usize {
        let cats = schema.column(column).unwrap().categories().unwrap();
        cats.iter().position(|c| c == value).unwrap()
    }

    /// On the Adult schema and its codebook rules: which cells are forbidden, checked cell
    /// by cell against what the rules say.
    #[test]
    fn the_adult_rules_forbid_exactly_the_unlawful_cells() {
        let (schema, domain) = adult();
        let s = Structural::of(&schema, &domain).unwrap();
        let a = |c: &str| attr(&domain, c).unwrap();
        let sizes = domain.sizes();
        // education -> education-num, three pairs, gain/loss; `age >= 17` forbids
        // nothing inside [17, 100].
        assert_eq!(s.determines.len(), 1);
        assert_eq!(s.zeros.len(), 3, "{:?}", s.cliques);
        assert!(
            s.cliques
                .contains(&vec![a("education"), a("education-num")])
        );
        let rel_sex = s
            .zeros
            .iter()
            .find(|z| z.attrs == vec![a("relationship"), a("sex")]);
        let z = rel_sex.expect("relationship × sex");
        let cell = |r: &str, x: &str| {
            level(&schema, "relationship", r) * sizes[a("sex")] + level(&schema, "sex", x)
        };
        assert!(z.forbidden[cell("Husband", "Female")]);
        assert!(!z.forbidden[cell("Husband", "Male")]);
        assert!(z.forbidden[cell("Wife", "Male")]);
        assert!(!z.forbidden[cell("Own-child", "Female")]);
        assert_eq!(z.forbidden.iter().filter(|f| **f).count(), 2);

        // Gains and losses: 100 bins then the points (0 and 99999 for gains, 0 for losses).
        let (g, l) = (a("capital-gain"), a("capital-loss"));
        let z = s.zeros.iter().find(|z| z.attrs == vec![g, l]).unwrap();
        let at = |gi: usize, li: usize| z.forbidden[gi * sizes[l] + li];
        let (g_zero, l_zero) = (100, 100);
        assert!(!at(g_zero, 5), "no gain, a loss");
        assert!(!at(40, l_zero), "a gain, no loss");
        assert!(at(40, 5), "a gain of about 40,000 and a loss");
        assert!(at(101, 5), "the top-coded gain and a loss");
        // 0 is a level of its own, so the first bins hold only values past it: a gain in
        // the first bin beside any loss, or any gain beside a loss in the first bin, breaks
        // the rule in every row.
        assert!(at(0, 5) && at(40, 0));
    }

    /// A model of the relationship × sex pair fitted to noisy counts that put mass on
    /// female husbands (noise does) draws none, and keeps the lawful cells' shares.
    #[test]
    fn a_fitted_model_never_draws_a_forbidden_cell() {
        let (schema, domain) = adult();
        let s = Structural::of(&schema, &domain).unwrap();
        let sizes = domain.sizes();
        let (r, x) = (
            attr(&domain, "relationship").unwrap(),
            attr(&domain, "sex").unwrap(),
        );
        let mut rng = rand::rngs::StdRng::seed_from_u64(2);
        let n = 5_000;
        let mut levels: Vec<Vec<u32>> = vec![vec![0; n]; sizes.len()];
        for i in 0..n {
            let rel = rng.random_range(0..6u32);
            let husband = level(&schema, "relationship", "Husband") as u32;
            let wife = level(&schema, "relationship", "Wife") as u32;
            let male = level(&schema, "sex", "Male") as u32;
            levels[r][i] = rel;
            levels[x][i] = match rel {
                _ if rel == husband => male,
                _ if rel == wife => 1 - male,
                _ => rng.random_range(0..2),
            };
        }
        let pair = vec![r.min(x), r.max(x)];
        let noisy: Vec<f64> = count(&levels, &sizes, &pair)
            .into_iter()
            .map(|c| c + 40.0 * rng.random::<f64>())
            .collect();
        let ms = vec![Measurement {
            attrs: pair.clone(),
            noisy,
            sigma: 20.0,
        }];
        let (_, mut e) = s.start(&sizes, n as f64);
        e.fit(&ms, 300);
        s.fix_determined(&mut e, &domain);
        let g = GraphicalModel::of_estimate(domain.clone(), &e, &ms, |_| Vec::new());
        let drawn = g.sample_levels(20_000, &mut rng);
        let z = s.zeros.iter().find(|z| z.attrs == pair).unwrap();
        let st = strides(&sizes, &pair);
        let broken = (0..20_000)
            .filter(|i| {
                z.forbidden[drawn[pair[0]][*i] as usize * st[0] + drawn[pair[1]][*i] as usize]
            })
            .count();
        assert_eq!(broken, 0);
        let own_child = level(&schema, "relationship", "Own-child") as u32;
        let share = drawn[r].iter().filter(|v| **v == own_child).count() as f64 / 20_000.0;
        assert!((share - 1.0 / 6.0).abs() < 0.03, "{share}");
        // Each education now has one education-num.
        let (ed, num) = (
            attr(&domain, "education").unwrap(),
            attr(&domain, "education-num").unwrap(),
        );
        let mut seen = std::collections::HashMap::new();
        for i in 0..20_000 {
            seen.entry(drawn[ed][i])
                .or_insert_with(std::collections::HashSet::new)
                .insert(drawn[num][i]);
        }
        assert!(seen.values().all(|v| v.len() == 1), "{seen:?}");
    }
}
