//! Numbers: abs, int, float, round, pow, sign, bit operations, random, type tests, min and max.

use std::cmp::Ordering;

use super::{int_or, need};
use crate::errors::{type_err, EvalErrorKind, R};
use crate::registry::{Call, Engine, Form, Interp, Spec};
use crate::value::{compare, Value, View};

/// Registers the math functions.
pub fn register(e: &mut Engine) {
    let one = Spec::new(&["value"], 1);
    let two = Spec::new(&["left", "right"], 2);
    e.register("abs", Form::Function, one, abs);
    e.register("int", Form::Function, one, int);
    e.register("float", Form::Function, one, float);
    e.register(
        "round",
        Form::Function,
        Spec::new(&["number", "ndigits"], 1),
        round,
    );
    e.register("floor", Form::Function, one, floor);
    e.register("ceil", Form::Function, one, ceil);
    e.register("sqrt", Form::Function, one, sqrt);
    e.register("pow", Form::Function, Spec::new(&["a", "b", "c"], 2), pow);
    e.register("sign", Form::Function, one, sign);
    e.register("bitwiseOr", Form::Function, two, bitwise_or);
    e.register("bitwiseAnd", Form::Function, two, bitwise_and);
    e.register("bitwiseXor", Form::Function, two, bitwise_xor);
    e.register("bitwiseNot", Form::Function, one, bitwise_not);
    e.register("shiftBitsLeft", Form::Function, two, shift_left);
    e.register("shiftBitsRight", Form::Function, two, shift_right);
    e.register(
        "random",
        Form::Function,
        Spec::new(&["from", "to"], 0),
        random,
    );
    e.register("isInteger", Form::Function, one, is_integer);
    e.register("isNumber", Form::Function, one, is_number);
    e.register("isBoolean", Form::Function, one, is_boolean);
    e.register("max", Form::Function, two, max2);
    e.register("min", Form::Function, two, min2);
}

fn num<'a>(it: &mut Interp<'a>, c: &Call<'a>, i: usize) -> R<Value<'a>> {
    let v = need(it, c, i)?;
    match v.view() {
        View::Int(_) | View::Float(_) => Ok(v),
        _ => Err(c.no_match(format!("needs a number, not a {}", v.type_name()))),
    }
}

fn int_arg<'a>(it: &mut Interp<'a>, c: &Call<'a>, i: usize) -> R<i64> {
    let v = need(it, c, i)?;
    v.as_int()
        .ok_or_else(|| c.no_match(format!("needs an integer, not a {}", v.type_name())))
}

fn abs<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    match num(it, c, 0)?.view() {
        View::Int(i) => Ok(Value::Int(i.checked_abs().ok_or(EvalErrorKind::Overflow)?)),
        View::Float(x) => Ok(Value::Float(x.abs())),
        _ => type_err("abs of a non-number"),
    }
}

fn float_to_int(x: f64) -> R<i64> {
    if !x.is_finite() || x.abs() >= 9.2e18 {
        return Err(EvalErrorKind::Overflow.into());
    }
    Ok(x.trunc() as i64)
}

fn int<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let v = need(it, c, 0)?;
    Ok(Value::Int(match v.view() {
        View::Null => 0,
        View::Int(i) => i,
        View::Bool(b) => i64::from(b),
        View::Float(x) => float_to_int(x)?,
        View::Str(s) => s
            .trim()
            .parse()
            .map_err(|_| EvalErrorKind::Value(format!("not an integer: {s:?}")))?,
        _ => return Err(c.no_match(format!("int of a {}", v.type_name()))),
    }))
}

fn float<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let v = need(it, c, 0)?;
    Ok(Value::Float(match v.view() {
        View::Null => 0.0,
        View::Int(i) => i as f64,
        View::Bool(b) => f64::from(u8::from(b)),
        View::Float(x) => x,
        View::Str(s) => s
            .trim()
            .parse()
            .map_err(|_| EvalErrorKind::Value(format!("not a number: {s:?}")))?,
        _ => return Err(c.no_match(format!("float of a {}", v.type_name()))),
    }))
}

fn round<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let v = num(it, c, 0)?;
    let digits = int_or(it, c, 1, 0)?.clamp(-300, 300) as i32;
    match v.view() {
        View::Int(i) if digits >= 0 => Ok(Value::Int(i)),
        _ => {
            let x = v.as_f64().unwrap_or(0.0);
            let m = 10f64.powi(digits);
            let r = (x * m).round_ties_even() / m;
            if c.has(1) {
                Ok(Value::Float(r))
            } else {
                Ok(Value::Int(float_to_int(r)?))
            }
        }
    }
}

fn floor<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let v = num(it, c, 0)?;
    Ok(Value::Int(match v.view() {
        View::Int(i) => i,
        _ => float_to_int(v.as_f64().unwrap_or(0.0).floor())?,
    }))
}

fn ceil<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let v = num(it, c, 0)?;
    Ok(Value::Int(match v.view() {
        View::Int(i) => i,
        _ => float_to_int(v.as_f64().unwrap_or(0.0).ceil())?,
    }))
}

fn sqrt<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let x = num(it, c, 0)?.as_f64().unwrap_or(0.0);
    if x < 0.0 {
        return Err(EvalErrorKind::Value("square root of a negative number".into()).into());
    }
    Ok(Value::Float(x.sqrt()))
}

fn pow<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let a = num(it, c, 0)?;
    let b = num(it, c, 1)?;
    if let (View::Int(a), View::Int(b)) = (a.view(), b.view()) {
        if c.has(2) {
            let m = int_arg(it, c, 2)?;
            if m == 0 || b < 0 {
                return Err(EvalErrorKind::Value(
                    "pow() modulus must be nonzero and the exponent non-negative".into(),
                )
                .into());
            }
            let (mut base, mut e, m) = (a.rem_euclid(m) as i128, b, m as i128);
            let mut r: i128 = 1;
            while e > 0 {
                if e & 1 == 1 {
                    r = r * base % m;
                }
                base = base * base % m;
                e >>= 1;
            }
            return Ok(Value::Int(r as i64));
        }
        if b >= 0 {
            let e = u32::try_from(b).map_err(|_| EvalErrorKind::Overflow)?;
            return Ok(Value::Int(a.checked_pow(e).ok_or(EvalErrorKind::Overflow)?));
        }
    }
    Ok(Value::Float(
        a.as_f64().unwrap_or(0.0).powf(b.as_f64().unwrap_or(0.0)),
    ))
}

fn sign<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let v = num(it, c, 0)?;
    let x = v.as_f64().unwrap_or(0.0);
    Ok(Value::Int(if x > 0.0 {
        1
    } else if x < 0.0 {
        -1
    } else {
        0
    }))
}

fn bits<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<(i64, i64)> {
    Ok((int_arg(it, c, 0)?, int_arg(it, c, 1)?))
}

fn bitwise_or<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let (a, b) = bits(it, c)?;
    Ok(Value::Int(a | b))
}

fn bitwise_and<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let (a, b) = bits(it, c)?;
    Ok(Value::Int(a & b))
}

fn bitwise_xor<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let (a, b) = bits(it, c)?;
    Ok(Value::Int(a ^ b))
}

fn bitwise_not<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    Ok(Value::Int(!int_arg(it, c, 0)?))
}

fn shift_left<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let (a, b) = bits(it, c)?;
    let b = u32::try_from(b).map_err(|_| EvalErrorKind::Value("negative shift count".into()))?;
    let r = a
        .checked_shl(b)
        .filter(|r| r >> b == a)
        .ok_or(EvalErrorKind::Overflow)?;
    Ok(Value::Int(r))
}

fn shift_right<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let (a, b) = bits(it, c)?;
    let b = u32::try_from(b).map_err(|_| EvalErrorKind::Value("negative shift count".into()))?;
    Ok(Value::Int(if b >= 64 {
        if a < 0 {
            -1
        } else {
            0
        }
    } else {
        a >> b
    }))
}

/// A pseudo-random 64-bit number (seeded by the standard library's per-process hash keys).
fn next_random() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    thread_local! {
        static STATE: std::cell::Cell<u64> = std::cell::Cell::new({
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u64(0x9e37_79b9_7f4a_7c15);
            h.finish() | 1
        });
    }
    STATE.with(|s| {
        let mut x = s.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.set(x);
        x
    })
}

fn random<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    if c.has(0) {
        let (a, b) = bits(it, c)?;
        if b < a {
            return Err(EvalErrorKind::Value("random(from, to) needs from <= to".into()).into());
        }
        let span = (b as i128 - a as i128 + 1) as u128;
        return Ok(Value::Int(
            (a as i128 + (next_random() as u128 % span) as i128) as i64,
        ));
    }
    Ok(Value::Float(
        (next_random() >> 11) as f64 / (1u64 << 53) as f64,
    ))
}

fn is_integer<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let v = need(it, c, 0)?;
    Ok(Value::Bool(matches!(v.view(), View::Int(_))))
}

fn is_number<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let v = need(it, c, 0)?;
    Ok(Value::Bool(matches!(
        v.view(),
        View::Int(_) | View::Float(_)
    )))
}

fn is_boolean<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let v = need(it, c, 0)?;
    Ok(Value::Bool(matches!(v.view(), View::Bool(_))))
}

fn pick<'a>(it: &mut Interp<'a>, c: &Call<'a>, want: Ordering) -> R<Value<'a>> {
    let a = need(it, c, 0)?;
    let b = need(it, c, 1)?;
    match compare(&b, &a) {
        Some(o) if o == want => Ok(b),
        Some(_) => Ok(a),
        None => Err(c.no_match(format!(
            "cannot compare a {} and a {}",
            a.type_name(),
            b.type_name()
        ))),
    }
}

fn max2<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    pick(it, c, Ordering::Greater)
}

fn min2<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    pick(it, c, Ordering::Less)
}
