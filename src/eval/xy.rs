//! The feature matrix every evaluation model trains on. Its own module so that the
//! classifier zoo (`models`) and the candle networks (`net`) both depend on it and not on
//! each other's internals.

/// A feature matrix (row-major, values on the encoded [0, 1] scale) with class labels.
#[derive(Debug, Clone)]
pub struct Xy {
    pub x: Vec<f64>,
    pub n: usize,
    pub p: usize,
    pub y: Vec<u32>,
}

impl Xy {
    pub fn row(&self, i: usize) -> &[f64] {
        &self.x[i * self.p..(i + 1) * self.p]
    }

    /// The first `m` rows of a seeded shuffle (all rows when `m ≥ n`).
    pub fn subsample(&self, m: usize, seed: u64) -> Xy {
        if m >= self.n {
            return self.clone();
        }
        let idx = shuffled(self.n, seed);
        let mut x = Vec::with_capacity(m * self.p);
        let mut y = Vec::with_capacity(m);
        for &i in &idx[..m] {
            x.extend_from_slice(self.row(i));
            y.push(self.y[i]);
        }
        Xy {
            x,
            n: m,
            p: self.p,
            y,
        }
    }
}

pub(crate) fn shuffled(n: usize, seed: u64) -> Vec<usize> {
    use rand::SeedableRng;
    use rand::seq::SliceRandom;
    let mut idx: Vec<usize> = (0..n).collect();
    idx.shuffle(&mut rand::rngs::StdRng::seed_from_u64(seed));
    idx
}
