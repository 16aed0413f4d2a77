//! Binary operators: arithmetic, comparison, membership and regex matching.

use std::cmp::Ordering;
use std::rc::Rc;

use indexmap::IndexSet;

use crate::ast::BinOp;
use crate::errors::{type_err, EvalErrorKind, R};
use crate::registry::Interp;
use crate::value::{compare, dict_items, equal, seq_items, Value, View};

fn op_err<T>(op: BinOp, l: &Value<'_>, r: &Value<'_>) -> R<T> {
    Err(EvalErrorKind::NoMatchingFunction(
        format!("#operator_{}", op.symbol()),
        format!("{} {} {}", l.type_name(), op.symbol(), r.type_name()),
    )
    .into())
}

/// Python's float modulo (the result takes the divisor's sign).
pub fn float_mod(a: f64, b: f64) -> f64 {
    let r = a % b;
    if r != 0.0 && ((r < 0.0) != (b < 0.0)) {
        r + b
    } else {
        r
    }
}

fn is_list(v: &Value<'_>) -> bool {
    matches!(v.view(), View::JList(_) | View::List(_))
}

fn repeat<'a>(it: &mut Interp<'a>, v: &Value<'a>, n: i64) -> R<Value<'a>> {
    let n = usize::try_from(n).unwrap_or(0);
    if let Some(s) = v.as_str() {
        it.check_bytes(s.len().saturating_mul(n))?;
        return Ok(Value::str(&s.repeat(n)));
    }
    let items = seq_items(v);
    it.check_len(items.len().saturating_mul(n))?;
    let mut out = Vec::with_capacity(items.len() * n);
    for _ in 0..n {
        out.extend(items.iter().cloned());
    }
    Ok(Value::list(out))
}

/// True when `needle` is in `hay` (a collection, or a substring of a string).
pub fn contains<'a>(it: &mut Interp<'a>, hay: &Value<'a>, needle: &Value<'a>) -> R<Option<bool>> {
    match hay.view() {
        View::Str(s) => Ok(needle.as_str().map(|n| s.contains(n))),
        View::Set(s) => Ok(Some(s.contains(needle))),
        View::JDict(_) | View::Dict(_) => Ok(None),
        View::JList(l) => {
            it.tick(l.len() as u64)?;
            Ok(Some(l.iter().any(|j| equal(&Value::from_json(j), needle))))
        }
        _ => match it.items(hay)? {
            Some(items) => {
                it.tick(items.len() as u64)?;
                Ok(Some(items.iter().any(|x| equal(x, needle))))
            }
            None => Ok(None),
        },
    }
}

/// Evaluates `l op r` for the eager operators.
pub fn binary<'a>(it: &mut Interp<'a>, op: BinOp, l: Value<'a>, r: Value<'a>) -> R<Value<'a>> {
    use View as V;
    if let Some(v) = super::datetime::binary(op, &l, &r) {
        return v;
    }
    match op {
        BinOp::Eq => return Ok(Value::Bool(equal(&l, &r))),
        BinOp::Ne => return Ok(Value::Bool(!equal(&l, &r))),
        BinOp::In => {
            return match contains(it, &r, &l)? {
                Some(b) => Ok(Value::Bool(b)),
                None => op_err(op, &l, &r),
            }
        }
        BinOp::Match | BinOp::NotMatch => {
            let Some(s) = l.as_str() else {
                return op_err(op, &l, &r);
            };
            let re = match &r {
                Value::Regex(re) => re.clone(),
                _ => match r.as_str() {
                    Some(p) => super::regex::compile(p, "")?,
                    None => return op_err(op, &l, &r),
                },
            };
            let m = re.is_match(s);
            return Ok(Value::Bool(if op == BinOp::Match { m } else { !m }));
        }
        BinOp::Gt | BinOp::Lt | BinOp::Ge | BinOp::Le => {
            if let (V::Set(a), V::Set(b)) = (l.view(), r.view()) {
                let sub = |x: &IndexSet<Value<'a>>, y: &IndexSet<Value<'a>>| {
                    x.iter().all(|v| y.contains(v))
                };
                return Ok(Value::Bool(match op {
                    BinOp::Lt => a.len() < b.len() && sub(a, b),
                    BinOp::Le => sub(a, b),
                    BinOp::Gt => a.len() > b.len() && sub(b, a),
                    _ => sub(b, a),
                }));
            }
            let Some(o) = compare(&l, &r) else {
                return op_err(op, &l, &r);
            };
            return Ok(Value::Bool(match op {
                BinOp::Gt => o == Ordering::Greater,
                BinOp::Lt => o == Ordering::Less,
                BinOp::Ge => o != Ordering::Less,
                _ => o != Ordering::Greater,
            }));
        }
        _ => {}
    }
    match (op, l.view(), r.view()) {
        (_, V::Int(a), V::Int(b)) => {
            let out = match op {
                BinOp::Add => a.checked_add(b),
                BinOp::Sub => a.checked_sub(b),
                BinOp::Mul => a.checked_mul(b),
                BinOp::Div | BinOp::Mod => {
                    if b == 0 {
                        return Err(EvalErrorKind::ZeroDivision.into());
                    }
                    let q = a.checked_div(b).ok_or(EvalErrorKind::Overflow)?;
                    let m = a - q * b;
                    // Python floors toward negative infinity.
                    let (q, m) = if m != 0 && ((m < 0) != (b < 0)) {
                        (q - 1, m + b)
                    } else {
                        (q, m)
                    };
                    Some(if op == BinOp::Div { q } else { m })
                }
                _ => None,
            };
            out.map(Value::Int)
                .ok_or_else(|| EvalErrorKind::Overflow.into())
        }
        (_, V::Int(_) | V::Float(_), V::Int(_) | V::Float(_)) => {
            let (a, b) = (l.as_f64().unwrap_or(0.0), r.as_f64().unwrap_or(0.0));
            Ok(Value::Float(match op {
                BinOp::Add => a + b,
                BinOp::Sub => a - b,
                BinOp::Mul => a * b,
                BinOp::Div | BinOp::Mod if b == 0.0 => {
                    return Err(EvalErrorKind::ZeroDivision.into())
                }
                BinOp::Div => a / b,
                BinOp::Mod => float_mod(a, b),
                _ => return op_err(op, &l, &r),
            }))
        }
        (BinOp::Add, V::Str(a), V::Str(b)) => {
            it.check_bytes(a.len() + b.len())?;
            let mut s = String::with_capacity(a.len() + b.len());
            s.push_str(a);
            s.push_str(b);
            Ok(Value::Str(Rc::from(s)))
        }
        (BinOp::Mul, V::Str(_) | V::JList(_) | V::List(_), V::Int(n)) => repeat(it, &l, n),
        (BinOp::Mul, V::Int(n), V::Str(_) | V::JList(_) | V::List(_)) => repeat(it, &r, n),
        (BinOp::Add, V::Set(a), V::Set(b)) => {
            let mut out = a.clone();
            out.extend(b.iter().cloned());
            it.check_len(out.len())?;
            Ok(Value::Set(Rc::new(out)))
        }
        (BinOp::Sub, V::Set(a), V::Set(b)) => Ok(Value::Set(Rc::new(
            a.iter().filter(|v| !b.contains(*v)).cloned().collect(),
        ))),
        (BinOp::Add, V::JDict(_) | V::Dict(_), V::JDict(_) | V::Dict(_)) => {
            let mut out: indexmap::IndexMap<Value<'a>, Value<'a>> =
                dict_items(&l).into_iter().collect();
            out.extend(dict_items(&r));
            it.check_len(out.len())?;
            Ok(Value::Dict(Rc::new(out)))
        }
        (BinOp::Add, _, _)
            if (is_list(&l) || matches!(l, Value::Gen(_)))
                && (is_list(&r) || matches!(r, Value::Gen(_))) =>
        {
            let mut out = it.seq(&l, "+")?;
            out.extend(it.seq(&r, "+")?);
            it.new_list(out)
        }
        _ => op_err(op, &l, &r),
    }
}

/// Fails unless `v` is a string.
pub fn need_str<'v>(v: &'v Value<'_>, what: &str) -> R<&'v str> {
    match v.as_str() {
        Some(s) => Ok(s),
        None => type_err(format!("{what} needs a string, not a {}", v.type_name())),
    }
}
