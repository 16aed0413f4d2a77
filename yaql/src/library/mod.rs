//! The standard library, split by area, with YAQL's names and function/method distinctions.

pub mod branching;
pub mod collections;
pub mod datetime;
pub mod math;
pub mod operators;
pub mod queries;
pub mod regex;
pub mod strings;
pub mod system;

use crate::errors::R;
use crate::registry::{Call, Engine, Interp};
use crate::value::Value;

/// Registers every area's functions.
pub fn register_all(e: &mut Engine) {
    queries::register(e);
    collections::register(e);
    strings::register(e);
    regex::register(e);
    math::register(e);
    branching::register(e);
    system::register(e);
    datetime::register(e);
}

/// Argument `i`, evaluated; `None` when not given.
pub fn get<'a>(it: &mut Interp<'a>, c: &Call<'a>, i: usize) -> R<Option<Value<'a>>> {
    it.value(c.slot(i))
}

/// Argument `i`, evaluated; a "no matching" failure when not given.
pub fn need<'a>(it: &mut Interp<'a>, c: &Call<'a>, i: usize) -> R<Value<'a>> {
    match get(it, c, i)? {
        Some(v) => Ok(v),
        None => Err(c.no_match(format!("argument {} is missing", i + 1))),
    }
}

/// Argument `i` as an integer, `default` when not given or null.
pub fn int_or<'a>(it: &mut Interp<'a>, c: &Call<'a>, i: usize, default: i64) -> R<i64> {
    match get(it, c, i)? {
        None | Some(Value::Null) => Ok(default),
        Some(v) => v
            .as_int()
            .ok_or_else(|| c.no_match(format!("argument {} must be an integer", i + 1))),
    }
}

/// Argument `i` as a string.
pub fn str_arg<'a>(it: &mut Interp<'a>, c: &Call<'a>, i: usize) -> R<String> {
    let v = need(it, c, i)?;
    v.as_str()
        .map(str::to_string)
        .ok_or_else(|| c.no_match(format!("argument {} must be a string", i + 1)))
}

/// The receiver's items; a "no matching" failure when it is no collection.
pub fn this_items<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Vec<Value<'a>>> {
    let this = c.this()?.clone();
    match it.items(&this)? {
        Some(items) => Ok(items),
        None => Err(c.no_match(format!("needs a collection, not a {}", this.type_name()))),
    }
}

/// The receiver as a string; a "no matching" failure otherwise.
pub fn this_str<'a>(c: &Call<'a>) -> R<String> {
    let this = c.this()?;
    this.as_str()
        .map(str::to_string)
        .ok_or_else(|| c.no_match(format!("needs a string, not a {}", this.type_name())))
}

/// A value evaluated with truthiness as a boolean result.
pub fn truth<'a>(it: &mut Interp<'a>, c: &Call<'a>, i: usize, args: &[Value<'a>]) -> R<bool> {
    Ok(it.apply(c.slot(i), args)?.truthy())
}
