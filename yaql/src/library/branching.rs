//! Branching: switch, selectCase, selectAllCases, examine, switchCase, coalesce.

use super::need;
use crate::errors::R;
use crate::registry::{Call, Engine, Form, Interp, Spec};
use crate::value::Value;

/// Registers the branching functions.
pub fn register(e: &mut Engine) {
    e.register("switch", Form::Function, Spec::any(), switch);
    e.register("selectCase", Form::Function, Spec::varargs(0), select_case);
    e.register(
        "selectAllCases",
        Form::Function,
        Spec::varargs(0),
        select_all_cases,
    );
    e.register("examine", Form::Function, Spec::varargs(0), examine);
    e.register("switchCase", Form::Method, Spec::varargs(1), switch_case);
    e.register("coalesce", Form::Function, Spec::varargs(0), coalesce);
}

fn switch<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    if !c.slots.is_empty() {
        return Err(c.no_match("switch takes only `condition => value` pairs"));
    }
    for (cond, value) in &c.maps {
        if it.eval(cond)?.truthy() {
            return it.eval(value);
        }
    }
    Ok(Value::Null)
}

fn conditions<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Vec<bool>> {
    let mut out = Vec::with_capacity(c.slots.len());
    for i in 0..c.slots.len() {
        out.push(need(it, c, i)?.truthy());
    }
    Ok(out)
}

fn select_case<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    for i in 0..c.slots.len() {
        if need(it, c, i)?.truthy() {
            return Ok(Value::Int(i as i64));
        }
    }
    Ok(Value::Int(c.slots.len() as i64))
}

fn select_all_cases<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let found = conditions(it, c)?;
    let out = found
        .iter()
        .enumerate()
        .filter(|(_, b)| **b)
        .map(|(i, _)| Value::Int(i as i64))
        .collect();
    it.new_iter(out)
}

fn examine<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let found = conditions(it, c)?;
    it.new_list(found.into_iter().map(Value::Bool).collect())
}

fn switch_case<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let this = c.this()?.clone();
    let i = this
        .as_int()
        .ok_or_else(|| c.no_match("switchCase needs an integer receiver"))?;
    let n = c.slots.len() as i64;
    let pick = if i < 0 || i >= n { n - 1 } else { i };
    need(it, c, pick as usize)
}

fn coalesce<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    for i in 0..c.slots.len() {
        let v = need(it, c, i)?;
        if !v.is_null() {
            return Ok(v);
        }
    }
    Ok(Value::Null)
}
