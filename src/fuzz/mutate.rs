//! Byte-level mutations for the fuzz driver: the classic havoc stack (bit flips, byte
//! sets, deletions, duplications, token insertions, splices, truncations), seeded, so a
//! run is reproducible from its seed.

use rand::rngs::StdRng;
use rand::{Rng as _, RngCore as _};

/// Bytes that change a parser's path: separators, quotes, line ends, signs, exponents.
const INTERESTING: &[u8] = &[
    0, 0xff, 0x7f, 0x80, b',', b';', b'\t', b'|', b'"', b'\n', b'\r', b'-', b'.', b'e', b'0', b'9',
    b' ', b'{', b'}', b'[', b']', b':', 0x1f, 0x8b, 3, 1, 8,
];

/// The largest input a mutation may produce (bigger inputs only slow the loop down).
pub const MAX_LEN: usize = 256 * 1024;

/// Applies 1–4 stacked mutations to `input`, with `tokens` for insertions and `others`
/// for splices.
pub fn mutate(input: &mut Vec<u8>, tokens: &[&[u8]], others: &[Vec<u8>], rng: &mut StdRng) {
    let n = 1 + rng.random_range(0..4);
    for _ in 0..n {
        one(input, tokens, others, rng);
    }
    input.truncate(MAX_LEN);
}

fn one(v: &mut Vec<u8>, tokens: &[&[u8]], others: &[Vec<u8>], rng: &mut StdRng) {
    let len = v.len();
    let at = |rng: &mut StdRng| {
        if len == 0 {
            0
        } else {
            rng.random_range(0..len)
        }
    };
    match rng.random_range(0..10) {
        0 if len > 0 => {
            let i = at(rng);
            v[i] ^= 1 << rng.random_range(0..8);
        }
        1 if len > 0 => {
            let i = at(rng);
            v[i] = rng.next_u32() as u8;
        }
        2 if len > 0 => {
            let i = at(rng);
            v[i] = INTERESTING[rng.random_range(0..INTERESTING.len())];
        }
        3 if len > 1 => {
            let i = at(rng);
            let k = rng.random_range(1..=16.min(len - i));
            v.drain(i..i + k);
        }
        4 if len > 0 => {
            let i = at(rng);
            let k = rng.random_range(1..=64.min(len - i));
            let copy: Vec<u8> = v[i..i + k].to_vec();
            let j = rng.random_range(0..=len);
            v.splice(j..j, copy);
        }
        5 if !tokens.is_empty() => {
            let t = tokens[rng.random_range(0..tokens.len())];
            let j = rng.random_range(0..=len);
            v.splice(j..j, t.iter().copied());
        }
        6 if !others.is_empty() => {
            let o = &others[rng.random_range(0..others.len())];
            let cut = rng.random_range(0..=len);
            let from = if o.is_empty() {
                0
            } else {
                rng.random_range(0..o.len())
            };
            v.truncate(cut);
            v.extend_from_slice(&o[from..]);
        }
        7 if len > 0 => {
            v.truncate(at(rng));
        }
        8 if len > 0 => {
            // Repeats one line many times: tall inputs from small seeds.
            let i = at(rng);
            let start = v[..i]
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |p| p + 1);
            let end = v[i..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(len, |p| i + p + 1);
            let line: Vec<u8> = v[start..end].to_vec();
            let times = rng.random_range(2..200);
            for _ in 0..times {
                if v.len() + line.len() > MAX_LEN {
                    break;
                }
                v.extend_from_slice(&line);
            }
        }
        _ => {
            let i = at(rng);
            let b = rng.next_u32() as u8;
            v.insert(i, b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng as _;

    #[test]
    fn mutations_are_reproducible_and_bounded() {
        let run = |seed| {
            let mut rng = StdRng::seed_from_u64(seed);
            let mut v = b"a,b\n1,2\n".to_vec();
            for _ in 0..500 {
                mutate(&mut v, &[b"NaN"], &[b"x;y\n".to_vec()], &mut rng);
                if v.is_empty() {
                    v = b"a,b\n".to_vec();
                }
            }
            v
        };
        assert_eq!(run(7), run(7));
        assert!(run(7).len() <= MAX_LEN);
    }
}
