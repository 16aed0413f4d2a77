//! System functions: let, with, def, lambda, call, assert, unpack.

use std::rc::Rc;

use super::{need, this_items};
use crate::ast::Kind;
use crate::errors::{EvalErrorKind, R};
use crate::registry::{bind_args, Call, Engine, Form, Interp, Slot, Spec};
use crate::value::{dict_items, Lambda, Name, Value};

/// Registers the system functions.
pub fn register(e: &mut Engine) {
    e.register("let", Form::Function, Spec::any(), let_);
    e.register("with", Form::Function, Spec::varargs(0), with);
    e.register("def", Form::Function, Spec::new(&["name", "body"], 2), def);
    e.register("lambda", Form::Function, Spec::new(&["body"], 1), lambda);
    e.register(
        "call",
        Form::Function,
        Spec::new(&["name", "args", "kwargs", "receiver"], 3),
        call,
    );
    e.register(
        "assert",
        Form::Method,
        Spec::new(&["condition", "message"], 1),
        assert,
    );
    e.register("unpack", Form::Method, Spec::varargs(0), unpack);
}

/// The text of a literal name argument (a bare word or a quoted string).
fn literal_name<'a>(c: &Call<'a>, i: usize) -> R<&'a str> {
    match c.slot(i) {
        Slot::Ast(n) => match n.kind() {
            Kind::Word(s) | Kind::Str(s) => Ok(s),
            _ => Err(c.no_match(format!("argument {} must be a literal name", i + 1))),
        },
        _ => Err(c.no_match(format!("argument {} must be a literal name", i + 1))),
    }
}

fn let_<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let mut pos = Vec::with_capacity(c.slots.len());
    for i in 0..c.slots.len() {
        pos.push(need(it, c, i)?);
    }
    let mut named = Vec::with_capacity(c.maps.len());
    for (k, v) in &c.maps {
        let (Kind::Word(name) | Kind::Str(name)) = k.kind() else {
            return Err(c.no_match("let(name => value): the name must be a literal"));
        };
        named.push((name, it.eval(v)?));
    }
    bind_args(&mut it.vars, &pos, &named);
    Ok(Value::Undef)
}

fn with<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let mut pos = Vec::with_capacity(c.slots.len());
    for i in 0..c.slots.len() {
        pos.push(need(it, c, i)?);
    }
    bind_args(&mut it.vars, &pos, &[]);
    Ok(Value::Undef)
}

fn def<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let name = literal_name(c, 0)?;
    let Slot::Ast(body) = c.slot(1) else {
        return Err(c.no_match("def(name, body)"));
    };
    let l = Lambda {
        body: *body,
        scope: it.capture_scope(),
    };
    it.vars.push((Name::Func(name), Value::Lambda(Rc::new(l))));
    Ok(Value::Undef)
}

fn lambda<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let Slot::Ast(body) = c.slot(0) else {
        return Err(c.no_match("lambda(body)"));
    };
    Ok(Value::Lambda(Rc::new(Lambda {
        body: *body,
        scope: it.capture_scope(),
    })))
}

/// Names YAQL gives the receiver parameter, accepted by `call()` as a named receiver.
const RECEIVER_NAMES: [&str; 6] = ["sequence", "collection", "string", "value", "obj", "dict"];

fn call<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let name = literal_name(c, 0)?;
    let args = need(it, c, 1)?;
    let kwargs = need(it, c, 2)?;
    let method = c.has(3);
    let fail = |why: &str| -> crate::errors::Fail {
        EvalErrorKind::NoMatchingFunction("call".into(), why.into()).into()
    };
    let Some(pos) = it.items(&args)? else {
        return Err(fail("args must be a list"));
    };
    if !kwargs.is_dict() {
        return Err(fail("kwargs must be a dictionary"));
    }
    let mut named = Vec::new();
    for (k, v) in dict_items(&kwargs) {
        let Some(k) = k.as_str() else {
            return Err(fail("kwargs keys must be strings"));
        };
        named.push((k.to_string(), v));
    }
    let engine = it.engine;
    if method {
        let recv = need(it, c, 3)?;
        let Some(entry) = engine.method(name) else {
            return Err(EvalErrorKind::NoMethod(name.into()).into());
        };
        let call = Call::from_values(name, entry, Some(recv), pos, named, true)?;
        return it.run(entry, &call);
    }
    let Some(entry) = engine.function(name) else {
        return Err(EvalErrorKind::NoFunction(name.into()).into());
    };
    let (recv, rest) = if entry.shift {
        let mut pos = pos;
        if pos.is_empty() {
            // The receiver may come by name (`sequence`, `collection`, ...): take the only one.
            if named.len() == 1 && RECEIVER_NAMES.contains(&named[0].0.as_str()) {
                let (_, v) = named.remove(0);
                (Some(v), pos)
            } else {
                return Err(fail("missing the first argument"));
            }
        } else {
            let first = pos.remove(0);
            (Some(first), pos)
        }
    } else {
        (None, pos)
    };
    let call = Call::from_values(name, entry, recv, rest, named, false)?;
    it.run(entry, &call)
}

fn assert<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let this = c.this()?.clone();
    if !it.apply(c.slot(0), std::slice::from_ref(&this))?.truthy() {
        let msg = match need(it, c, 1) {
            Ok(m) => crate::value::display_string(&m),
            Err(_) => "condition is false".to_string(),
        };
        return Err(EvalErrorKind::Assertion(msg).into());
    }
    Ok(this)
}

fn unpack<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let items = this_items(it, c)?;
    if c.slots.is_empty() {
        bind_args(&mut it.vars, &items, &[]);
        return Ok(Value::Undef);
    }
    if c.slots.len() != items.len() {
        return Err(EvalErrorKind::Value(format!(
            "cannot unpack {} items into {} names",
            items.len(),
            c.slots.len()
        ))
        .into());
    }
    let mut named = Vec::with_capacity(items.len());
    for (i, v) in items.into_iter().enumerate() {
        named.push((literal_name(c, i)?, v));
    }
    bind_args(&mut it.vars, &[], &named);
    Ok(Value::Undef)
}
