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
            right: "education-num".into(),
            map: vec![]
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
    // Row 3 is repaired (its years from the map, its loss set to the 0 the gain rule
    // fixes); row 6 breaks a rule that leaves a choice, so it is dropped.
    assert_eq!(e.table.n_rows, 5);
    assert_eq!(
        e.table.column("loss").unwrap().text(2).as_deref(),
        Some("0")
    );
    assert_eq!(
        broken_counts(&rules, &schema, &e.table).unwrap(),
        vec![0, 0, 0]
    );
    let years = e.table.column("years").unwrap();
    assert_eq!(years.text(0).as_deref(), Some("9"));
}

#[test]
fn a_map_given_with_the_rule_is_the_one_a_release_writes() {
    let schema = adult_schema();
    let line = r#"education -> education-num {Bachelors: 13, "HS-grad": 9, "11th": 7}"#;
    let rules = parse_text(line, "r").unwrap();
    check(&rules, &schema).unwrap();
    let Rule::Determines { map, .. } = &rules[0].rule else {
        panic!("{:?}", rules[0])
    };
    assert_eq!(
        map[0],
        (Value::Text("Bachelors".into()), Value::Number(13.0))
    );
    for (bad, want) in [
        (
            "education -> education-num {Bachelor: 13}",
            "not a level of 'education'",
        ),
        (
            "education -> education-num {Bachelors: 30}",
            "outside the bounds",
        ),
        (
            "education -> education-num {Bachelors: 13, Bachelors: 12}",
            "mapped twice",
        ),
        ("education -> education-num {Bachelors 13}", "expected ':'"),
        (
            "education -> education-num {Bachelors: , Masters: 14}",
            "no value after ':'",
        ),
    ] {
        let e = parse_text(bad, "r").and_then(|r| check(&r, &schema).map(|_| r));
        let e = e.unwrap_err().to_string();
        assert!(e.contains(want), "{bad}: {e}");
    }
    // A model that never learnt the link: every level drawn with 15. The given map wins
    // over the model's favourite; a level it does not list keeps the favourite.
    let mut csv = String::from("education,education-num\n");
    for e in ["Bachelors", "HS-grad", "11th", "Masters"] {
        for _ in 0..3 {
            csv.push_str(&format!("{e},15\n"));
        }
    }
    let t = table(&csv);
    let small: Schema = serde_json::from_str(
        r#"{"columns":[
        {"name":"education","kind":"categorical","domain":{"categories":["Bachelors","HS-grad","11th","Masters"]}},
        {"name":"education-num","kind":"continuous","integer":true,"domain":{"bounds":{"lower":1,"upper":16}}}]}"#,
    )
    .unwrap();
    let repair = Repair::learn(&rules, &small, &t).unwrap();
    let e = enforce(&rules, &small, t, &repair).unwrap();
    let col = |r: usize, c: &str| e.table.column(c).unwrap().text(r).unwrap();
    for r in 0..e.table.n_rows {
        let want = match col(r, "education").as_str() {
            "Bachelors" => "13",
            "HS-grad" => "9",
            "11th" => "7",
            _ => "15",
        };
        assert_eq!(col(r, "education-num"), want, "row {r}");
    }
    assert_eq!(broken_counts(&rules, &small, &e.table).unwrap(), vec![0]);
}

#[test]
fn a_fixed_consequence_is_repaired_and_a_chosen_one_dropped() {
    let schema: Schema = serde_json::from_str(
        r#"{"columns":[
        {"name":"participation","kind":"categorical","domain":{"categories":["no","yes"]}},
        {"name":"hours","kind":"continuous","integer":true,"point_masses":[0],"domain":{"bounds":{"lower":0,"upper":5000}}},
        {"name":"wage","kind":"continuous","point_masses":[0],"domain":{"bounds":{"lower":0,"upper":30}}}]}"#,
    )
    .unwrap();
    let rules = parse_text(
        "participation = \"no\" => hours = 0\nparticipation = \"no\" => wage = 0\nparticipation = \"yes\" => hours > 0",
        "r",
    )
    .unwrap();
    check(&rules, &schema).unwrap();
    let t = table("participation,hours,wage\nno,37,4.5\nno,0,0\nyes,0,3\nyes,1200,8.25\n");
    let e = enforce(&rules, &schema, t, &Repair::default()).unwrap();
    // The non-participant drawn with hours is one with none (not dropped); the participant
    // with 0 hours cannot be repaired by a rule that leaves the hours open: dropped.
    assert_eq!(e.table.n_rows, 3);
    let col = |r: usize, c: &str| e.table.column(c).unwrap().text(r).unwrap();
    assert_eq!(
        (col(0, "participation"), col(0, "hours"), col(0, "wage")),
        ("no".into(), "0".into(), "0".into())
    );
    assert_eq!(
        broken_counts(&rules, &schema, &e.table).unwrap(),
        vec![0, 0, 0]
    );
}
