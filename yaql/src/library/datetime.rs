//! Dates and times as YAQL has them: `datetime(...)`, `timespan(...)`, `now()`, `localtz()`,
//! `utctz()`, `isDatetime`, `isTimespan`, the properties (`.year`, `.offset`, `.hours`, ...),
//! `replace()`, `format()` and the operators (`datetime + timespan`, `datetime - datetime`, ...).
//!
//! A datetime always carries its UTC offset (YAQL's are never naive: a string without one is read
//! as UTC); a timespan is a signed count of microseconds, Python's `timedelta` resolution.

use chrono::format::{Parsed, StrftimeItems};
use chrono::{DateTime, Datelike, FixedOffset, NaiveDate, NaiveDateTime, NaiveTime, TimeZone};
use chrono::{Timelike, Utc};

use crate::ast::BinOp;
use crate::errors::{EvalErrorKind, R};
use crate::registry::{Call, Engine, Form, Interp, Spec};
use crate::value::{Value, View};

use super::{get, need, str_arg};

pub use crate::value::datetime_text;

/// Microseconds in a second.
const SEC: i64 = 1_000_000;

/// Registers the date and time functions.
pub fn register(e: &mut Engine) {
    e.register(
        "datetime",
        Form::Function,
        Spec::new(
            &[
                "year",
                "month",
                "day",
                "hour",
                "minute",
                "second",
                "microsecond",
                "offset",
            ],
            1,
        ),
        datetime,
    );
    e.register(
        "timespan",
        Form::Function,
        Spec::new(
            &[
                "days",
                "hours",
                "minutes",
                "seconds",
                "milliseconds",
                "microseconds",
            ],
            0,
        ),
        timespan,
    );
    e.register("now", Form::Function, Spec::new(&["offset"], 0), now);
    e.register("localtz", Form::Function, Spec::new(&[], 0), localtz);
    e.register("utctz", Form::Function, Spec::new(&[], 0), utctz);
    e.register(
        "isDatetime",
        Form::Function,
        Spec::new(&["value"], 1),
        is_datetime,
    );
    e.register(
        "isTimespan",
        Form::Function,
        Spec::new(&["value"], 1),
        is_timespan,
    );
}

fn bad(msg: impl Into<String>) -> crate::errors::Fail {
    EvalErrorKind::Value(msg.into()).into()
}

/// An offset of `micros` as a time zone (whole seconds, less than a day either way).
fn zone(micros: i64) -> R<FixedOffset> {
    i32::try_from(micros / SEC)
        .ok()
        .and_then(FixedOffset::east_opt)
        .ok_or_else(|| bad("a time zone offset must be less than a day"))
}

/// The argument `i` as a timespan (microseconds); `default` when not given or null.
fn span_arg<'a>(it: &mut Interp<'a>, c: &Call<'a>, i: usize, default: i64) -> R<i64> {
    match get(it, c, i)? {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Span(us)) => Ok(us),
        Some(v) => Err(c.no_match(format!("needs a timespan, not a {}", v.type_name()))),
    }
}

fn int_arg<'a>(it: &mut Interp<'a>, c: &Call<'a>, i: usize, default: i64) -> R<i64> {
    match get(it, c, i)? {
        None | Some(Value::Null) => Ok(default),
        Some(v) => v
            .as_int()
            .ok_or_else(|| c.no_match(format!("argument {} must be an integer", i + 1))),
    }
}

/// `datetime(year, month, day, ...)`, `datetime(timestamp, offset)` or `datetime(string, format)`.
fn datetime<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let first = need(it, c, 0)?;
    if let Some(s) = first.as_str() {
        let s = s.to_string();
        let format = match get(it, c, 1)? {
            None | Some(Value::Null) => None,
            Some(v) => Some(
                v.as_str()
                    .ok_or_else(|| c.no_match("the format must be a string"))?
                    .to_string(),
            ),
        };
        return Ok(Value::DateTime(match format {
            Some(f) if !f.is_empty() => parse_with(&s, &f)?,
            _ => parse_free(&s)?,
        }));
    }
    if !c.has(1) || (matches!(first, Value::Float(_)) && !c.has(2)) {
        // A timestamp, and perhaps an offset (the second parameter, or `offset =>`).
        let Some(ts) = first.as_f64() else {
            return Err(c.no_match(format!(
                "needs a year, a timestamp or a string, not a {}",
                first.type_name()
            )));
        };
        let offset = span_arg(it, c, 7, 0)?;
        let offset = if c.has(1) {
            span_arg(it, c, 1, 0)?
        } else {
            offset
        };
        let micros = (ts * 1e6).round();
        if !micros.is_finite() || micros.abs() > 9.0e18 {
            return Err(bad("timestamp out of range"));
        }
        let utc = DateTime::from_timestamp_micros(micros as i64)
            .ok_or_else(|| bad("timestamp out of range"))?;
        return Ok(Value::DateTime(utc.with_timezone(&zone(offset)?)));
    }
    let year = first
        .as_int()
        .ok_or_else(|| c.no_match("the year must be an integer"))?;
    let part = |v: i64| u32::try_from(v).ok();
    let (month, day) = (int_arg(it, c, 1, 1)?, int_arg(it, c, 2, 1)?);
    let (hour, minute) = (int_arg(it, c, 3, 0)?, int_arg(it, c, 4, 0)?);
    let (second, micro) = (int_arg(it, c, 5, 0)?, int_arg(it, c, 6, 0)?);
    let offset = zone(span_arg(it, c, 7, 0)?)?;
    let date = i32::try_from(year)
        .ok()
        .zip(part(month))
        .zip(part(day))
        .and_then(|((y, m), d)| NaiveDate::from_ymd_opt(y, m, d))
        .ok_or_else(|| bad(format!("no such date: {year}-{month}-{day}")))?;
    let time = part(hour)
        .zip(part(minute))
        .zip(part(second))
        .zip(part(micro).filter(|u| *u < 1_000_000))
        .and_then(|(((h, m), s), u)| NaiveTime::from_hms_micro_opt(h, m, s, u))
        .ok_or_else(|| bad(format!("no such time: {hour}:{minute}:{second}.{micro}")))?;
    local(date.and_time(time), offset)
}

fn local<'a>(naive: NaiveDateTime, offset: FixedOffset) -> R<Value<'a>> {
    offset
        .from_local_datetime(&naive)
        .single()
        .map(Value::DateTime)
        .ok_or_else(|| bad("date out of range"))
}

/// `strptime`-style parsing (chrono's format codes, which are C99's); fields the format does not
/// give default as Python's do (1900-01-01, midnight, UTC).
fn parse_with(s: &str, format: &str) -> R<DateTime<FixedOffset>> {
    let mut p = Parsed::new();
    chrono::format::parse(&mut p, s, StrftimeItems::new(format))
        .map_err(|e| bad(format!("{s:?} does not match the format {format:?}: {e}")))?;
    if p.year().is_none() && p.year_div_100().is_none() && p.isoyear().is_none() {
        let _ = p.set_year(1900);
    }
    if p.month().is_none() && p.ordinal().is_none() && p.isoweek().is_none() {
        let _ = p.set_month(1);
    }
    if p.day().is_none() && p.ordinal().is_none() && p.weekday().is_none() {
        let _ = p.set_day(1);
    }
    if p.hour_div_12().is_none() && p.hour_mod_12().is_none() {
        let _ = p.set_hour(0);
    }
    if p.minute().is_none() {
        let _ = p.set_minute(0);
    }
    let date = p
        .to_naive_date()
        .map_err(|e| bad(format!("{s:?}: no date ({e})")))?;
    let time = p
        .to_naive_time()
        .map_err(|e| bad(format!("{s:?}: no time ({e})")))?;
    let offset = zone(i64::from(p.offset().unwrap_or(0)) * SEC)?;
    offset
        .from_local_datetime(&date.and_time(time))
        .single()
        .ok_or_else(|| bad("date out of range"))
}

/// Dates as people write them (what `dateutil` reads for YAQL): ISO 8601 with or without a time
/// and offset (`2015-8-29`, `2015-08-29T10:00:00.5+03:00`, `2015-08-29 10:00Z`), `29.8.2015`,
/// `8/29/2015`; without an offset the time is UTC.
fn parse_free(text: &str) -> R<DateTime<FixedOffset>> {
    let s = text.trim();
    const ZONED: [&str; 4] = [
        "%Y-%m-%dT%H:%M:%S%.f%:z",
        "%Y-%m-%d %H:%M:%S%.f%:z",
        "%Y-%m-%dT%H:%M%:z",
        "%Y-%m-%d %H:%M%:z",
    ];
    let zulu = s.strip_suffix('Z').or_else(|| s.strip_suffix('z'));
    let bare = zulu.unwrap_or(s);
    for f in ZONED {
        if let Ok(dt) = DateTime::parse_from_str(s, f) {
            return Ok(dt);
        }
    }
    const NAIVE: [&str; 10] = [
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%d %H:%M",
        "%Y%m%dT%H%M%S",
        "%d.%m.%Y %H:%M:%S",
        "%d.%m.%Y %H:%M",
        "%m/%d/%Y %H:%M:%S",
        "%m/%d/%Y %H:%M",
        "%Y/%m/%d %H:%M:%S",
    ];
    for f in NAIVE {
        if let Ok(n) = NaiveDateTime::parse_from_str(bare, f) {
            return Ok(Utc.from_utc_datetime(&n).fixed_offset());
        }
    }
    const DATES: [&str; 5] = ["%Y-%m-%d", "%Y%m%d", "%d.%m.%Y", "%m/%d/%Y", "%Y/%m/%d"];
    for f in DATES {
        if let Ok(d) = NaiveDate::parse_from_str(bare, f) {
            return Ok(Utc
                .from_utc_datetime(&d.and_time(NaiveTime::MIN))
                .fixed_offset());
        }
    }
    Err(bad(format!("cannot read a date from {text:?}")))
}

/// `timespan(days => 0, hours => 0, minutes => 0, seconds => 0, milliseconds => 0, microseconds => 0)`.
fn timespan<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    const UNITS: [i64; 6] = [86_400 * SEC, 3_600 * SEC, 60 * SEC, SEC, 1_000, 1];
    let mut total: i64 = 0;
    for (i, unit) in UNITS.iter().enumerate() {
        let n = int_arg(it, c, i, 0)?;
        total = n
            .checked_mul(*unit)
            .and_then(|x| total.checked_add(x))
            .ok_or(EvalErrorKind::Overflow)?;
    }
    Ok(Value::Span(total))
}

fn now<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let offset = zone(span_arg(it, c, 0, 0)?)?;
    Ok(Value::DateTime(Utc::now().with_timezone(&offset)))
}

/// The machine's current offset from UTC (daylight saving time included).
fn localtz<'a>(_: &mut Interp<'a>, _: &Call<'a>) -> R<Value<'a>> {
    let secs = chrono::Local::now().offset().local_minus_utc();
    Ok(Value::Span(i64::from(secs) * SEC))
}

fn utctz<'a>(_: &mut Interp<'a>, _: &Call<'a>) -> R<Value<'a>> {
    Ok(Value::Span(0))
}

fn is_datetime<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    Ok(Value::Bool(matches!(need(it, c, 0)?, Value::DateTime(_))))
}

fn is_timespan<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    Ok(Value::Bool(matches!(need(it, c, 0)?, Value::Span(_))))
}

/// `value.name` for a datetime or a timespan; `None` when `value` is neither.
pub fn property<'a>(value: &Value<'a>, name: &str) -> Option<R<Value<'a>>> {
    match value.view() {
        View::DateTime(dt) => Some(datetime_property(dt, name)),
        View::Span(us) => Some(span_property(us, name)),
        _ => None,
    }
}

fn no_property<'a>(what: &str, name: &str) -> R<Value<'a>> {
    Err(EvalErrorKind::KeyNotFound(format!("{name} (a {what} has no such property)")).into())
}

fn datetime_property<'a>(dt: DateTime<FixedOffset>, name: &str) -> R<Value<'a>> {
    let int = |n: u32| Value::Int(i64::from(n));
    Ok(match name {
        "year" => Value::Int(i64::from(dt.year())),
        "month" => int(dt.month()),
        "day" => int(dt.day()),
        "hour" => int(dt.hour()),
        "minute" => int(dt.minute()),
        "second" => int(dt.second()),
        "microsecond" => int(dt.nanosecond() / 1_000 % 1_000_000),
        "weekday" => int(dt.weekday().num_days_from_monday()),
        "offset" => Value::Span(i64::from(dt.offset().local_minus_utc()) * SEC),
        "timestamp" => Value::Float(dt.timestamp_micros() as f64 / 1e6),
        "date" => local(dt.date_naive().and_time(NaiveTime::MIN), *dt.offset())?,
        "time" => {
            let t = dt.time();
            Value::Span(
                i64::from(t.num_seconds_from_midnight()) * SEC
                    + i64::from(t.nanosecond() / 1_000 % 1_000_000),
            )
        }
        "utc" => Value::DateTime(dt.with_timezone(&Utc).fixed_offset()),
        _ => return no_property("datetime", name),
    })
}

fn span_property<'a>(us: i64, name: &str) -> R<Value<'a>> {
    let per = |unit: f64| Value::Float(us as f64 / unit);
    Ok(match name {
        "microseconds" => Value::Int(us),
        "milliseconds" => per(1e3),
        "seconds" => per(1e6),
        "minutes" => per(6e7),
        "hours" => per(3.6e9),
        "days" => per(8.64e10),
        _ => return no_property("timespan", name),
    })
}

/// Adds `us` microseconds to a datetime.
fn shift<'a>(dt: DateTime<FixedOffset>, us: i64) -> R<Value<'a>> {
    dt.checked_add_signed(chrono::TimeDelta::microseconds(us))
        .map(Value::DateTime)
        .ok_or_else(|| bad("date out of range"))
}

/// `l op r` when either side is a datetime or a timespan; `None` when neither is.
pub fn binary<'a>(op: BinOp, l: &Value<'a>, r: &Value<'a>) -> Option<R<Value<'a>>> {
    let (a, b) = (l.view(), r.view());
    if !matches!(a, View::DateTime(_) | View::Span(_))
        && !matches!(b, View::DateTime(_) | View::Span(_))
    {
        return None;
    }
    let overflow = || EvalErrorKind::Overflow.into();
    let scaled = |us: i64, k: f64| {
        let x = (us as f64 * k).round();
        if x.is_finite() && x.abs() < 9.0e18 {
            Ok(Value::Span(x as i64))
        } else {
            Err(overflow())
        }
    };
    Some(match (op, a, b) {
        (BinOp::Add, View::DateTime(d), View::Span(s))
        | (BinOp::Add, View::Span(s), View::DateTime(d)) => shift(d, s),
        (BinOp::Sub, View::DateTime(d), View::Span(s)) => match s.checked_neg() {
            Some(s) => shift(d, s),
            None => Err(overflow()),
        },
        (BinOp::Sub, View::DateTime(x), View::DateTime(y)) => {
            Ok(Value::Span((x - y).num_microseconds().unwrap_or(i64::MAX)))
        }
        (BinOp::Add, View::Span(x), View::Span(y)) => {
            x.checked_add(y).map(Value::Span).ok_or_else(overflow)
        }
        (BinOp::Sub, View::Span(x), View::Span(y)) => {
            x.checked_sub(y).map(Value::Span).ok_or_else(overflow)
        }
        (BinOp::Mul, View::Span(s), View::Int(n)) | (BinOp::Mul, View::Int(n), View::Span(s)) => {
            s.checked_mul(n).map(Value::Span).ok_or_else(overflow)
        }
        (BinOp::Mul, View::Span(s), View::Float(k))
        | (BinOp::Mul, View::Float(k), View::Span(s)) => scaled(s, k),
        (BinOp::Div, View::Span(_), View::Span(0)) => Err(EvalErrorKind::ZeroDivision.into()),
        (BinOp::Div, View::Span(x), View::Span(y)) => Ok(Value::Float(x as f64 / y as f64)),
        (BinOp::Div, View::Span(s), View::Int(n)) if n != 0 => Ok(Value::Span(s.div_euclid(n))),
        (BinOp::Div, View::Span(s), View::Float(k)) if k != 0.0 => scaled(s, 1.0 / k),
        (BinOp::Div, View::Span(_), View::Int(_) | View::Float(_)) => {
            Err(EvalErrorKind::ZeroDivision.into())
        }
        _ => return None,
    })
}

/// `dt.format(pattern)`: `strftime` (C99 format codes).
pub fn format<'a>(it: &mut Interp<'a>, c: &Call<'a>, dt: DateTime<FixedOffset>) -> R<Value<'a>> {
    use std::fmt::Write;
    let pattern = str_arg(it, c, 0)?;
    let items: Vec<_> = StrftimeItems::new(&pattern).collect();
    if items
        .iter()
        .any(|i| matches!(i, chrono::format::Item::Error))
    {
        return Err(bad(format!("bad date format {pattern:?}")));
    }
    let mut out = String::new();
    write!(out, "{}", dt.format_with_items(items.into_iter()))
        .map_err(|_| bad(format!("bad date format {pattern:?}")))?;
    it.check_bytes(out.len())?;
    Ok(Value::str(&out))
}

/// `dt.replace(year => ..., month => ..., ..., offset => ...)`: the named parts replaced (the
/// wall-clock time is kept when the offset changes, as Python's `replace(tzinfo=...)`).
pub fn replace<'a>(it: &mut Interp<'a>, c: &Call<'a>, dt: DateTime<FixedOffset>) -> R<Value<'a>> {
    let mut parts = [
        i64::from(dt.year()),
        i64::from(dt.month()),
        i64::from(dt.day()),
        i64::from(dt.hour()),
        i64::from(dt.minute()),
        i64::from(dt.second()),
        i64::from(dt.nanosecond() / 1_000 % 1_000_000),
    ];
    const NAMES: [&str; 7] = [
        "year",
        "month",
        "day",
        "hour",
        "minute",
        "second",
        "microsecond",
    ];
    let mut offset = *dt.offset();
    for (i, slot) in c.slots.iter().enumerate() {
        if let Some(v) = it.value(slot)? {
            set_part(c, &mut parts, &mut offset, NAMES.get(i).copied(), v)?;
        }
    }
    for (k, v) in &c.maps {
        let crate::ast::Kind::Word(name) = k.kind() else {
            return Err(c.no_match("replace takes named parts"));
        };
        let v = it.eval(v)?;
        let name = match name {
            "offset" => None,
            n => Some(
                NAMES
                    .iter()
                    .copied()
                    .find(|x| *x == n)
                    .ok_or_else(|| c.no_match(format!("no parameter `{n}`")))?,
            ),
        };
        set_part(c, &mut parts, &mut offset, name, v)?;
    }
    let p = |i: usize| u32::try_from(parts[i]).ok();
    let date = i32::try_from(parts[0])
        .ok()
        .zip(p(1))
        .zip(p(2))
        .and_then(|((y, m), d)| NaiveDate::from_ymd_opt(y, m, d))
        .ok_or_else(|| bad("no such date"))?;
    let time = p(3)
        .zip(p(4))
        .zip(p(5))
        .zip(p(6).filter(|u| *u < 1_000_000))
        .and_then(|(((h, m), s), u)| NaiveTime::from_hms_micro_opt(h, m, s, u))
        .ok_or_else(|| bad("no such time"))?;
    local(date.and_time(time), offset)
}

fn set_part(
    c: &Call<'_>,
    parts: &mut [i64; 7],
    offset: &mut FixedOffset,
    name: Option<&str>,
    v: Value<'_>,
) -> R<()> {
    if matches!(v, Value::Null) {
        return Ok(());
    }
    match name {
        None => match v {
            Value::Span(us) => *offset = zone(us)?,
            _ => return Err(c.no_match("the offset must be a timespan")),
        },
        Some(n) => {
            let i = [
                "year",
                "month",
                "day",
                "hour",
                "minute",
                "second",
                "microsecond",
            ]
            .iter()
            .position(|x| *x == n)
            .unwrap_or(0);
            parts[i] = v
                .as_int()
                .ok_or_else(|| c.no_match(format!("`{n}` must be an integer")))?;
        }
    }
    Ok(())
}
