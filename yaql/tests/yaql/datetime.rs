//! Dates and times as YAQL's documentation shows them: constructors, properties, arithmetic,
//! parsing, formatting, and the errors a user meets.

use plinth_yaql::Engine;
use serde_json::{json, Value as J};

fn eval(text: &str) -> J {
    match Engine::new().eval_str(text, &J::Null) {
        Ok(v) => v,
        Err(e) => panic!("{text}: {e}"),
    }
}

fn fails(text: &str) -> String {
    match Engine::new().eval_str(text, &J::Null) {
        Ok(v) => panic!("{text} gave {v}, not an error"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn constructors_and_properties() {
    assert_eq!(
        eval("let(datetime(2015, 9, 29)) -> [$.year, $.month, $.day]"),
        json!([2015, 9, 29])
    );
    assert_eq!(
        eval("datetime(2006, 11, 21, 16, 30, 2, 123).microsecond"),
        json!(123)
    );
    assert_eq!(eval("datetime(2006, 11, 21, 16, 30).weekday"), json!(1));
    assert_eq!(
        eval("datetime(2006, 11, 21, 16, 30).timestamp"),
        json!(1164126600.0)
    );
    assert_eq!(
        eval("let(datetime(1256953732)) -> [$.year, $.month, $.day]"),
        json!([2009, 10, 31])
    );
    assert_eq!(
        eval("datetime(2006, 11, 21, 16, 30, offset => timespan(hours => 3)).utc.hour"),
        json!(13)
    );
    assert_eq!(
        eval("datetime(2006, 11, 21, 16, 30, offset => timespan(hours => 3)).offset.hours"),
        json!(3.0)
    );
    assert_eq!(
        eval("let(datetime(2006, 11, 21, 16, 30).time) -> [$.hours, $.minutes]"),
        json!([16.5, 990.0])
    );
    assert_eq!(
        eval(
            "let(datetime(2006, 11, 21, 16, 30, 2, 123).date) -> [$.year, $.month, $.day, $.hour]"
        ),
        json!([2006, 11, 21, 0])
    );
    assert_eq!(
        eval("timespan(days => 1, hours => 2, minutes => 3).hours"),
        json!(26.05)
    );
    assert_eq!(eval("timespan(seconds => 1).microseconds"), json!(1000000));
    assert_eq!(eval("utctz().hours"), json!(0.0));
    assert_eq!(
        eval("datetime(2015, 9, 29).replace(year => 2014).year"),
        json!(2014)
    );
}

#[test]
fn arithmetic_and_comparison() {
    assert_eq!(
        eval("let(datetime(2015, 1, 1) + timespan(days => 100)) -> $.month"),
        json!(4)
    );
    assert_eq!(
        eval("(datetime(2015, 1, 2) - datetime(2015, 1, 1)).hours"),
        json!(24.0)
    );
    assert_eq!(
        eval("(timespan(days => 1) - timespan(hours => 12)).hours"),
        json!(12.0)
    );
    assert_eq!(
        eval("(2 * timespan(hours => 24)).hours + (timespan(hours => 24) / 2).hours"),
        json!(60.0)
    );
    assert_eq!(
        eval("timespan(hours => 24) / timespan(hours => 12)"),
        json!(2.0)
    );
    assert_eq!(eval("(-timespan(hours => 24)).hours"), json!(-24.0));
    assert_eq!(
        eval("datetime(2011, 11, 11) > datetime(2010, 10, 10)"),
        json!(true)
    );
    assert_eq!(
        eval("timespan(hours => 24) >= timespan(days => 1)"),
        json!(true)
    );
    // The same instant in two zones is equal, as Python's aware datetimes are.
    assert_eq!(
        eval("datetime(2006, 1, 1, 13) = datetime(2006, 1, 1, 16, offset => timespan(hours => 3))"),
        json!(true)
    );
}

#[test]
fn parsing_formatting_and_json() {
    assert_eq!(
        eval(r#"let(datetime("29.8.2015")) -> [$.year, $.month, $.day]"#),
        json!([2015, 8, 29])
    );
    assert_eq!(
        eval(r#"let(datetime("29.8?2015", "%d.%m?%Y")) -> [$.year, $.month, $.day]"#),
        json!([2015, 8, 29])
    );
    assert_eq!(
        eval(r#"datetime("2015-08-29T10:00:00.5+03:00").utc.hour"#),
        json!(7)
    );
    assert_eq!(
        eval(r#"datetime(2016, 7, 19, 8, 49).format("%A, %d. %B %Y %I:%M%p")"#),
        json!("Tuesday, 19. July 2016 08:49AM")
    );
    // Results are JSON: a datetime is its ISO 8601 text, a timespan its seconds.
    assert_eq!(
        eval("datetime(2015, 8, 29, 10, offset => timespan(hours => 2))"),
        json!("2015-08-29T10:00:00+02:00")
    );
    assert_eq!(
        eval("timespan(minutes => 1, milliseconds => 500)"),
        json!(60.5)
    );
    assert_eq!(
        eval("isDatetime(now()) and isTimespan(localtz()) and not isDatetime('2015-1-1')"),
        json!(true)
    );
}

#[test]
fn bad_dates_are_clear_errors() {
    assert!(fails("datetime(2015, 2, 30)").contains("no such date: 2015-2-30"));
    assert!(fails(r#"datetime("yesterday")"#).contains("cannot read a date from \"yesterday\""));
    assert!(fails(r#"datetime("2015", "%d.%m")"#).contains("does not match the format"));
    assert!(fails("datetime(2015, 1, 1).fortnight").contains("fortnight"));
    assert!(fails("timespan(hours => 1) / 0").contains("division by zero"));
}
