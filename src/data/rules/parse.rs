//! The text of a rule, one per line, into its parts.
//!
//! ```text
//! # one rule per line; a name with characters other than letters, digits, _ - . goes in `backquotes`
//! education -> education-num            # each education has exactly one education-num
//! education -> education-num {"Bachelors": 13, "HS-grad": 9}   # … and the codebook's map
//! relationship = "Husband" => sex = "Male"
//! relationship in {"Husband", "Wife"} => marital-status in {"Married-civ-spouse", "Married-AF-spouse"}
//! capital-gain > 0 => capital-loss = 0
//! age >= 17
//! start_date <= end_date
//! ```
//!
//! A `->` rule may carry its map as a public fact (a codebook table): `{left: right, …}`,
//! each side a value (a bare word is text). Left values it does not list keep the value
//! the model favours. A condition is one or more comparisons joined by `and`. The right side of a comparison
//! is a value when it is quoted text or a number, else a column name (`start <= end`).

use std::fmt;

/// A comparison's operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Op {
    pub fn symbol(self) -> &'static str {
        match self {
            Op::Eq => "=",
            Op::Ne => "!=",
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
        }
    }

    /// Whether `a op b` holds for an ordering of a against b.
    pub fn holds(self, ord: std::cmp::Ordering) -> bool {
        use std::cmp::Ordering::*;
        match self {
            Op::Eq => ord == Equal,
            Op::Ne => ord != Equal,
            Op::Lt => ord == Less,
            Op::Le => ord != Greater,
            Op::Gt => ord == Greater,
            Op::Ge => ord != Less,
        }
    }
}

/// A literal a rule compares with.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Text(String),
    Number(f64),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Text(s) => write!(f, "{s:?}"),
            Value::Number(x) => write!(f, "{}", crate::util::fmt::number(*x)),
        }
    }
}

/// One comparison.
#[derive(Debug, Clone, PartialEq)]
pub enum Atom {
    /// `column op value`
    Compare {
        column: String,
        op: Op,
        value: Value,
    },
    /// `column in {v, …}`
    In { column: String, values: Vec<Value> },
    /// `left op right`, two columns.
    Columns { left: String, op: Op, right: String },
}

impl Atom {
    /// The columns the comparison reads.
    pub fn columns(&self) -> Vec<&str> {
        match self {
            Atom::Compare { column, .. } | Atom::In { column, .. } => vec![column],
            Atom::Columns { left, right, .. } => vec![left, right],
        }
    }
}

/// Comparisons that must all hold.
#[derive(Debug, Clone, PartialEq)]
pub struct Cond(pub Vec<Atom>);

/// One rule: a fact about every row the user states.
#[derive(Debug, Clone, PartialEq)]
pub enum Rule {
    /// `left -> right`: each value of `left` goes with exactly one value of `right`;
    /// `map`, when given, says which (a public fact, as a codebook states it).
    Determines {
        left: String,
        right: String,
        map: Vec<(Value, Value)>,
    },
    /// `when => then`
    Implies { when: Cond, then: Cond },
    /// A condition every row meets.
    Holds(Cond),
}

impl Rule {
    /// The columns the rule reads, each once, in order of appearance.
    pub fn columns(&self) -> Vec<&str> {
        let conds: Vec<&Cond> = match self {
            Rule::Determines { left, right, .. } => return vec![left, right],
            Rule::Implies { when, then } => vec![when, then],
            Rule::Holds(c) => vec![c],
        };
        let mut out: Vec<&str> = Vec::new();
        for c in conds {
            for a in &c.0 {
                for n in a.columns() {
                    if !out.contains(&n) {
                        out.push(n);
                    }
                }
            }
        }
        out
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Name(String),
    Text(String),
    Number(f64),
    Op(Op),
    Arrow,
    Implies,
    In,
    And,
    Open,
    Close,
    Comma,
    Colon,
}

fn describe(t: Option<&Token>) -> String {
    match t {
        None => "the end of the line".into(),
        Some(Token::Name(n)) => format!("'{n}'"),
        Some(Token::Text(s)) => format!("{s:?}"),
        Some(Token::Number(x)) => format!("{x}"),
        Some(Token::Op(o)) => format!("'{}'", o.symbol()),
        Some(Token::Arrow) => "'->'".into(),
        Some(Token::Implies) => "'=>'".into(),
        Some(Token::In) => "'in'".into(),
        Some(Token::And) => "'and'".into(),
        Some(Token::Open) => "'{'".into(),
        Some(Token::Close) => "'}'".into(),
        Some(Token::Comma) => "','".into(),
        Some(Token::Colon) => "':'".into(),
    }
}

fn is_name_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '.')
}

/// Reads a quoted run ending at `close`, with `\` escaping the next character.
fn quoted(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    close: char,
) -> Result<String, String> {
    let mut s = String::new();
    loop {
        match chars.next() {
            None => return Err(format!("a {close}…{close} is not closed")),
            Some('\\') => match chars.next() {
                Some(c) => s.push(c),
                None => return Err(format!("a {close}…{close} is not closed")),
            },
            Some(c) if c == close => return Ok(s),
            Some(c) => s.push(c),
        }
    }
}

fn tokens(line: &str) -> Result<Vec<Token>, String> {
    let mut out = Vec::new();
    let mut chars = line.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
            continue;
        }
        if c == '#' {
            break;
        }
        chars.next();
        let next = chars.peek().copied();
        let two = |t: Token, chars: &mut std::iter::Peekable<std::str::Chars<'_>>| {
            chars.next();
            t
        };
        let t = match (c, next) {
            ('"', _) => Token::Text(quoted(&mut chars, '"')?),
            ('`', _) => Token::Name(quoted(&mut chars, '`')?),
            ('-', Some('>')) => two(Token::Arrow, &mut chars),
            ('=', Some('>')) => two(Token::Implies, &mut chars),
            ('=', Some('=')) => two(Token::Op(Op::Eq), &mut chars),
            ('=', _) => Token::Op(Op::Eq),
            ('!', Some('=')) => two(Token::Op(Op::Ne), &mut chars),
            ('<', Some('=')) => two(Token::Op(Op::Le), &mut chars),
            ('>', Some('=')) => two(Token::Op(Op::Ge), &mut chars),
            ('<', _) => Token::Op(Op::Lt),
            ('>', _) => Token::Op(Op::Gt),
            ('{', _) => Token::Open,
            ('}', _) => Token::Close,
            (',', _) => Token::Comma,
            (':', _) => Token::Colon,
            (c, _) if is_name_char(c) => {
                let mut word = c.to_string();
                while let Some(&d) = chars.peek() {
                    // A name may hold '-' but '->' ends it.
                    if !is_name_char(d) || (d == '-' && arrow_follows(&chars)) {
                        break;
                    }
                    word.push(d);
                    chars.next();
                }
                word_token(word)
            }
            (c, _) => return Err(format!("unexpected character '{c}'")),
        };
        out.push(t);
    }
    Ok(out)
}

/// Whether the next two characters are "->".
fn arrow_follows(chars: &std::iter::Peekable<std::str::Chars<'_>>) -> bool {
    let mut ahead = chars.clone();
    ahead.next() == Some('-') && ahead.next() == Some('>')
}

fn word_token(word: String) -> Token {
    match word.as_str() {
        "in" => Token::In,
        "and" => Token::And,
        _ => match word.parse::<f64>() {
            Ok(x) if x.is_finite() && !word.ends_with('.') => Token::Number(x),
            _ => Token::Name(word),
        },
    }
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn next(&mut self) -> Option<Token> {
        let t = self.tokens.get(self.at).cloned();
        self.at += 1;
        t
    }

    fn expected(&self, what: &str) -> String {
        format!("expected {what}, found {}", describe(self.peek()))
    }

    fn name(&mut self) -> Result<String, String> {
        match self.peek() {
            Some(Token::Name(n)) => {
                let n = n.clone();
                self.at += 1;
                Ok(n)
            }
            _ => Err(self.expected("a column name")),
        }
    }

    fn value(&mut self) -> Result<Value, String> {
        match self.next() {
            Some(Token::Text(s)) => Ok(Value::Text(s)),
            Some(Token::Number(x)) => Ok(Value::Number(x)),
            t => Err(format!(
                "expected a value (\"text\" or a number), found {}",
                describe(t.as_ref())
            )),
        }
    }

    /// A map's key or value: quoted text, a number, or a bare word taken as text.
    fn map_value(&mut self) -> Result<Value, String> {
        match self.peek() {
            Some(Token::Name(n)) => {
                let v = Value::Text(n.clone());
                self.at += 1;
                Ok(v)
            }
            _ => self.value(),
        }
    }

    /// `left: right, …}` after a `->` rule's `{`.
    fn map(&mut self) -> Result<Vec<(Value, Value)>, String> {
        let mut out: Vec<(Value, Value)> = Vec::new();
        if self.peek() == Some(&Token::Close) {
            self.at += 1;
            return Ok(out);
        }
        loop {
            let key = self.map_value()?;
            if self.next() != Some(Token::Colon) {
                return Err(format!("expected ':' after {key} in the map"));
            }
            if matches!(self.peek(), Some(Token::Comma | Token::Close) | None) {
                return Err(format!(
                    "{key} has no value after ':' in the map; type the value it goes with"
                ));
            }
            let value = self.map_value()?;
            if out.iter().any(|(k, _)| *k == key) {
                return Err(format!("{key} is mapped twice"));
            }
            out.push((key, value));
            match self.next() {
                Some(Token::Comma) => {}
                Some(Token::Close) => return Ok(out),
                t => {
                    return Err(format!(
                        "expected ',' or '}}' in the map, found {}",
                        describe(t.as_ref())
                    ));
                }
            }
        }
    }

    fn atom(&mut self) -> Result<Atom, String> {
        let column = self.name()?;
        match self.next() {
            Some(Token::Op(op)) => match self.peek() {
                Some(Token::Name(_)) => Ok(Atom::Columns {
                    left: column,
                    op,
                    right: self.name()?,
                }),
                _ => Ok(Atom::Compare {
                    column,
                    op,
                    value: self.value()?,
                }),
            },
            Some(Token::In) => {
                if self.next() != Some(Token::Open) {
                    return Err("expected '{' after 'in'".into());
                }
                let mut values = vec![self.value()?];
                loop {
                    match self.next() {
                        Some(Token::Comma) => values.push(self.value()?),
                        Some(Token::Close) => break,
                        t => {
                            return Err(format!(
                                "expected ',' or '}}' in a set of values, found {}",
                                describe(t.as_ref())
                            ));
                        }
                    }
                }
                Ok(Atom::In { column, values })
            }
            t => Err(format!(
                "expected a comparison (=, !=, <, <=, >, >=, in) after '{column}', found {}",
                describe(t.as_ref())
            )),
        }
    }

    fn cond(&mut self) -> Result<Cond, String> {
        let mut atoms = vec![self.atom()?];
        while self.peek() == Some(&Token::And) {
            self.at += 1;
            atoms.push(self.atom()?);
        }
        Ok(Cond(atoms))
    }

    fn rule(&mut self) -> Result<Rule, String> {
        if let (Some(Token::Name(_)), Some(Token::Arrow)) =
            (self.tokens.first(), self.tokens.get(1))
        {
            let left = self.name()?;
            self.at += 1;
            let right = self.name()?;
            let map = if self.peek() == Some(&Token::Open) {
                self.at += 1;
                self.map()?
            } else {
                Vec::new()
            };
            return Ok(Rule::Determines { left, right, map });
        }
        let when = self.cond()?;
        if self.peek() == Some(&Token::Implies) {
            self.at += 1;
            let then = self.cond()?;
            return Ok(Rule::Implies { when, then });
        }
        Ok(Rule::Holds(when))
    }
}

/// Parses one condition (`sex = "Female" and age >= 60`), as `sample --where` takes it.
pub fn parse_condition(text: &str) -> Result<Cond, String> {
    let mut p = Parser {
        tokens: tokens(text)?,
        at: 0,
    };
    if p.peek().is_none() {
        return Err("the condition is empty".into());
    }
    let c = p.cond()?;
    if p.peek().is_some() {
        return Err(p.expected("'and' or the end of the condition"));
    }
    Ok(c)
}

/// Parses one line; `Ok(None)` for a blank or comment-only line.
pub fn parse_line(line: &str) -> Result<Option<Rule>, String> {
    let mut p = Parser {
        tokens: tokens(line)?,
        at: 0,
    };
    if p.peek().is_none() {
        return Ok(None);
    }
    let r = p.rule()?;
    if p.peek().is_some() {
        return Err(p.expected("the end of the rule"));
    }
    Ok(Some(r))
}

impl fmt::Display for Cond {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = |n: &str| {
            if n.chars().all(is_name_char) && word_token(n.to_string()) == Token::Name(n.into()) {
                n.to_string()
            } else {
                format!("`{n}`")
            }
        };
        for (i, a) in self.0.iter().enumerate() {
            if i > 0 {
                write!(f, " and ")?;
            }
            match a {
                Atom::Compare { column, op, value } => {
                    write!(f, "{} {} {value}", name(column), op.symbol())?
                }
                Atom::In { column, values } => {
                    let v: Vec<String> = values.iter().map(Value::to_string).collect();
                    write!(f, "{} in {{{}}}", name(column), v.join(", "))?
                }
                Atom::Columns { left, op, right } => {
                    write!(f, "{} {} {}", name(left), op.symbol(), name(right))?
                }
            }
        }
        Ok(())
    }
}
