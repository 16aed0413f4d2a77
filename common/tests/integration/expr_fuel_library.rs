//! Every `yaql_exp` in Fuel's real deployment graphs parses (and its canonical text parses back
//! to the same tree).

use plinth_common::expr::Expression;

use crate::support;

#[test]
fn every_yaql_exp_in_fuel_library_parses() {
    let exprs = support::fuel_yaql_exps();
    assert_eq!(exprs.len(), 206, "Fuel's library has 206 yaql_exp");
    let mut failures = Vec::new();
    for e in &exprs {
        match Expression::parse(e) {
            Ok(parsed) => {
                let again = Expression::parse(&parsed.to_string());
                if again.as_ref().ok() != Some(&parsed) {
                    failures.push(format!("round trip of {e:?} via {:?}", parsed.to_string()));
                }
            }
            Err(err) => failures.push(err.to_string()),
        }
    }
    println!("{} yaql_exp", exprs.len());
    assert!(
        failures.is_empty(),
        "{} of {} fail:\n{}",
        failures.len(),
        exprs.len(),
        failures.join("\n")
    );
}
