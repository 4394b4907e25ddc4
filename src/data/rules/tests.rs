use super::*;
use crate::data::Table;
use crate::data::csv::{LoadOptions, parse_csv_bytes};

/// The contract's lines, as a user writes them.
const ADULT_RULES: &str = r#"# one rule per line; a name with characters other than letters, digits, _ - . goes in `backquotes`
education -> education-num            # each education has exactly one education-num
relationship = "Husband" => sex = "Male"
relationship = "Wife" => sex = "Female"
relationship in {"Husband", "Wife"} => marital-status in {"Married-civ-spouse", "Married-AF-spouse"}
capital-gain > 0 => capital-loss = 0
age >= 17
start_date <= end_date
"#;

fn adult_schema() -> Schema {
    Schema::load(std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/assets/adult/adult.schema.json"
    )))
    .unwrap()
}

#[test]
fn every_line_of_the_contract_parses() {
    let rules = parse_text(ADULT_RULES, "rules.txt").unwrap();
    assert_eq!(rules.len(), 7);
    assert_eq!(rules[0].line, 2);
    assert_eq!(rules[0].text, "education -> education-num");
    assert_eq!(
        rules[0].rule,
        Rule::Determines {
            left: "education".into(),
            right: "education-num".into()
        }
    );
    let Rule::Implies { when, then } = &rules[3].rule else {
        panic!("{:?}", rules[3])
    };
    assert_eq!(
        when.0[0],
        Atom::In {
            column: "relationship".into(),
            values: vec![Value::Text("Husband".into()), Value::Text("Wife".into())]
        }
    );
    assert_eq!(then.0[0].columns(), vec!["marital-status"]);
    assert_eq!(
        rules[4].rule,
        Rule::Implies {
            when: Cond(vec![Atom::Compare {
                column: "capital-gain".into(),
                op: Op::Gt,
                value: Value::Number(0.0)
            }]),
            then: Cond(vec![Atom::Compare {
                column: "capital-loss".into(),
                op: Op::Eq,
                value: Value::Number(0.0)
            }]),
        }
    );
    assert_eq!(
        rules[6].rule,
        Rule::Holds(Cond(vec![Atom::Columns {
            left: "start_date".into(),
            op: Op::Le,
            right: "end_date".into()
        }]))
    );
    // Backquoted names and conjunctions.
    let r = parse_line(r#"`hours per week` >= 1 and sex != "Male" => `a#b` = "x # y""#)
        .unwrap()
        .unwrap();
    assert_eq!(r.columns(), vec!["hours per week", "sex", "a#b"]);
    let c = parse_condition(r#"sex = "Female" and age >= 60"#).unwrap();
    assert_eq!(c.to_string(), r#"sex = "Female" and age >= 60"#);
}

#[test]
fn bad_lines_say_where_and_why() {
    let cases = [
        ("age >=", "expected a value"),
        ("age 17", "expected a comparison"),
        (r#"sex = "Male"#, "not closed"),
        (r#"sex in {"Male" "Female"}"#, "expected ',' or '}'"),
        ("age >= 17 17", "expected the end of the rule"),
        ("age ~ 3", "unexpected character '~'"),
        ("-> sex", "expected a column name"),
    ];
    for (line, want) in cases {
        let text = format!("# header\n{line}\n");
        let e = parse_text(&text, "r.txt").unwrap_err().to_string();
        assert!(e.contains("line 2") && e.contains(want), "{line}: {e}");
    }
}

#[test]
fn rules_are_checked_against_the_schema() {
    let schema = adult_schema();
    let good = parse_text(
        &ADULT_RULES.replace("start_date <= end_date", "age <= hours-per-week + 0"),
        "r",
    );
    // `+` is not part of the grammar: refused, with the line.
    assert!(good.unwrap_err().to_string().contains("line 8"));
    let six: String = ADULT_RULES.lines().take(7).collect::<Vec<_>>().join("\n");
    let rules = parse_text(&six, "r").unwrap();
    check(&rules, &schema).unwrap();
    let bad = [
        ("agee >= 17", "no column 'agee'"),
        (r#"sex = "male""#, "not a level of 'sex'"),
        (r#"education > "HS-grad""#, "no order"),
        (r#"age = "old""#, "compare it with a number"),
        ("age <= sex", "not comparable"),
        ("education -> education", "determines itself"),
    ];
    for (line, want) in bad {
        let r = parse_text(line, "r").unwrap();
        let e = check(&r, &schema).unwrap_err().to_string();
        assert!(e.contains("line 1") && e.contains(want), "{line}: {e}");
    }
    // Rules no row can satisfy together are refused, naming both lines.
    let r = parse_text("age >= 60\nage < 30\n", "r").unwrap();
    let e = check(&r, &schema).unwrap_err().to_string();
    assert!(e.contains("lines 1, 2") && e.contains("'age'"), "{e}");
    let r = parse_text("sex != \"Male\"\nsex != \"Female\"\n", "r").unwrap();
    assert!(check(&r, &schema).is_err());
    let r = parse_text("age >= 60\nage <= 60\n", "r").unwrap();
    check(&r, &schema).unwrap();
}

fn table(csv: &str) -> Table {
    parse_csv_bytes(csv.as_bytes().to_vec(), "t", &LoadOptions::default()).unwrap()
}

#[test]
fn broken_rows_are_counted_and_a_release_obeys_the_rules() {
    let schema: Schema = serde_json::from_str(
        r#"{"columns":[
        {"name":"edu","kind":"categorical","domain":{"categories":["HS","BA","MA"]}},
        {"name":"years","kind":"continuous","integer":true,"domain":{"bounds":{"lower":1,"upper":20}}},
        {"name":"gain","kind":"continuous","integer":true,"missing":true,"domain":{"bounds":{"lower":0,"upper":100}}},
        {"name":"loss","kind":"continuous","integer":true,"domain":{"bounds":{"lower":0,"upper":100}}}]}"#,
    )
    .unwrap();
    let rules = parse_text("edu -> years\ngain > 0 => loss = 0\nyears >= 9", "r").unwrap();
    check(&rules, &schema).unwrap();
    let t = table(
        "edu,years,gain,loss\nHS,9,0,5\nHS,9,10,0\nHS,10,10,3\nBA,13,,4\nBA,13,0,0\nMA,5,0,0\n",
    );
    // Row 3 breaks the map (HS goes with 9) and the gain rule; row 6 is years 5 < 9; a
    // blank gain breaks nothing.
    assert_eq!(broken_counts(&rules, &schema, &t).unwrap(), vec![1, 1, 1]);
    let repair = Repair::learn(&rules, &schema, &t).unwrap();
    let e = enforce(&rules, &schema, t, &repair).unwrap();
    assert_eq!(e.drawn, 6);
    assert_eq!(e.table.n_rows, 4);
    assert_eq!(
        broken_counts(&rules, &schema, &e.table).unwrap(),
        vec![0, 0, 0]
    );
    let years = e.table.column("years").unwrap();
    assert_eq!(years.text(0).as_deref(), Some("9"));
}
