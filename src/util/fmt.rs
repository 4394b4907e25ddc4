//! Canonical text for numbers, so a value read from a CSV prints back the same way.

/// Formats a finite number the way a person wrote it: integers without a decimal point,
/// other values in Rust's shortest round-trip form.
pub fn number(x: f64) -> String {
    if x.is_finite() && x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

/// Parses a cell as a finite number. `inf`/`NaN` spellings are not numbers here: they
/// would poison scaling, and `NaN` is a missing-value token anyway.
pub fn parse_number(s: &str) -> Option<f64> {
    let b = s.as_bytes();
    let first = *b.first()?;
    if !(first.is_ascii_digit() || first == b'-' || first == b'+' || first == b'.') {
        return None;
    }
    s.parse::<f64>().ok().filter(|x| x.is_finite())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_print_without_point() {
        assert_eq!(number(39.0), "39");
        assert_eq!(number(-2.0), "-2");
        assert_eq!(number(0.1), "0.1");
        assert_eq!(number(1.5e20), "150000000000000000000");
    }

    #[test]
    fn parse_rejects_words_and_non_finite() {
        assert_eq!(parse_number("12"), Some(12.0));
        assert_eq!(parse_number("-1.5e3"), Some(-1500.0));
        assert_eq!(parse_number("inf"), None);
        assert_eq!(parse_number("NaN"), None);
        assert_eq!(parse_number("1,234"), None);
        assert_eq!(parse_number(""), None);
    }
}
