//! Deployment helpers with Nailgun's semantics: `new()`, `old()`, `changed()`, `changedAll()`,
//! `changedAny()`, `added()`, `deleted()`, `isUndef()`, `toJson()`, `toYaml()`.
//!
//! `old(expr)` evaluates `expr` against the last deployed state and is the undefined value when
//! there is none, when the deployment is forced, or when the old state lacks what `expr` reads.
//! With no old state or a forced deployment everything has changed.

use std::rc::Rc;

use indexmap::IndexMap;

use super::ast::{Kind, Node};
use super::errors::{EvalErrorKind, R};
use super::library::{need, this_items};
use super::registry::{Call, Engine, Form, Interp, Slot, Spec};
use super::states::{Map, StateRoot};
use super::value::{dict_items, equal, seq_items, to_json, Value, View};

/// Registers the deployment helpers.
pub fn register(e: &mut Engine) {
    let one = Spec::new(&["expression"], 1);
    e.register("new", Form::Function, one, new);
    e.register("old", Form::Function, one, old);
    e.register("changed", Form::Function, one, changed);
    e.register("changedAll", Form::Function, Spec::varargs(1), changed_all);
    e.register("changedAny", Form::Function, Spec::varargs(1), changed_any);
    e.register("added", Form::Function, one, added);
    e.register("deleted", Form::Function, one, deleted);
    e.register("isUndef", Form::Both, Spec::new(&[], 0), is_undef);
    e.register("toJson", Form::Both, Spec::new(&[], 0), to_json_fn);
    e.register("toYaml", Form::Both, Spec::new(&[], 0), to_yaml_fn);
}

/// `$.key` when `node` is just that and the states are layers: the key read from `layers`
/// without merging them (`None` for anything else).
fn layered_key<'a>(
    node: &Slot<'a>,
    layers: Option<(&'a Map, &'a Map)>,
) -> Option<Option<Value<'a>>> {
    let (Slot::Ast(n), Some(layers)) = (node, layers) else {
        return None;
    };
    let Kind::Member {
        recv,
        rhs,
        safe: false,
    } = n.kind()
    else {
        return None;
    };
    match (recv.kind(), rhs.kind()) {
        (Kind::Var(v), Kind::Word(k)) if v.is_empty() || v == "1" => {
            Some(super::states::layered_get_at(layers, k, *n).map(Value::from_json))
        }
        _ => None,
    }
}

fn new_value<'a>(it: &mut Interp<'a>, c: &Call<'a>, i: usize) -> R<Value<'a>> {
    if it.states.new.is_none() {
        if let Some(v) = layered_key(c.slot(i), it.layers.map(|l| l.new)) {
            return v.ok_or_else(|| key_missing(c.slot(i)));
        }
        // `$` the layered state, merged only if the argument needs it whole.
        if let (Slot::Ast(n), Some(_)) = (c.slot(i), it.layers) {
            return it.eval_in_state(*n, StateRoot::New);
        }
    }
    match it.new_state() {
        Some(data) => it.apply(c.slot(i), &[data]),
        None => need(it, c, i),
    }
}

/// The argument evaluated against the old state; undefined when that is impossible.
/// The error `$.key` gives when the key is missing.
fn key_missing(slot: &Slot<'_>) -> super::errors::Fail {
    let (key, pos) = match slot {
        Slot::Ast(n) => match n.kind() {
            Kind::Member { rhs, .. } => match rhs.kind() {
                Kind::Word(k) => (k.to_string(), Some(n.pos())),
                _ => (String::new(), None),
            },
            _ => (String::new(), None),
        },
        _ => (String::new(), None),
    };
    let mut f: super::errors::Fail = EvalErrorKind::KeyNotFound(key).into();
    f.pos = pos;
    f
}

fn old_value<'a>(it: &mut Interp<'a>, c: &Call<'a>, i: usize) -> R<Value<'a>> {
    let layered_old = it.layers.is_some_and(|l| l.old.is_some());
    let result = if it.states.old.is_none() && !it.states.forced && layered_old {
        if let Some(v) = layered_key(c.slot(i), it.layers.and_then(|l| l.old)) {
            return Ok(v.unwrap_or(Value::Undef));
        }
        match c.slot(i) {
            // `$` the layered old state, merged only if the argument needs it whole.
            Slot::Ast(n) => it.eval_in_state(*n, StateRoot::Old),
            other => {
                let old = it.old_state().unwrap_or(Value::Null);
                it.apply(other, &[old])
            }
        }
    } else {
        let (old, forced) = (it.old_state(), it.states.forced);
        // Without an old state (or when forced) the old state is empty, as Nailgun passes `{}`:
        // `old($)` is an empty dictionary and `old($.x)` is undefined.
        let old = match old {
            Some(data) if !forced => data,
            _ => Value::Dict(Rc::new(IndexMap::new())),
        };
        it.apply(c.slot(i), &[old])
    };
    match result {
        Ok(v) => Ok(v),
        Err(f)
            if matches!(
                *f.kind,
                EvalErrorKind::StepLimit(_) | EvalErrorKind::TooDeep(_)
            ) =>
        {
            Err(f)
        }
        Err(_) => Ok(Value::Undef),
    }
}

fn has_old(it: &Interp<'_>) -> bool {
    (it.states.old.is_some() || it.layers.is_some_and(|l| l.old.is_some())) && !it.states.forced
}

fn new<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    new_value(it, c, 0)
}

fn old<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    old_value(it, c, 0)
}

fn changed_at<'a>(it: &mut Interp<'a>, c: &Call<'a>, i: usize) -> R<bool> {
    if let Slot::Ast(node) = c.slot(i) {
        if let Some(known) = it.changed_part(*node) {
            return Ok(known);
        }
        if let Some(changed) = root_changed(it, *node) {
            return Ok(changed);
        }
    }
    let n = new_value(it, c, i)?;
    if !has_old(it) {
        return Ok(true);
    }
    let o = old_value(it, c, i)?;
    Ok(!equal(&n, &o))
}

/// `changed($)` on layered states whose cluster parts are known to agree (or not) outside the
/// node's own keys: only those keys are compared. `None` when that is not known.
fn root_changed(it: &Interp<'_>, node: Node<'_>) -> Option<bool> {
    if !matches!(node.kind(), Kind::Var(v) if v.is_empty() || v == "1") || it.states.forced {
        return None;
    }
    let l = it.layers?;
    let old = l.old?;
    let (same, keys) = l.same_outside?;
    if !same {
        return Some(true);
    }
    Some(keys.iter().any(|k| {
        match (
            super::states::layered_get(l.new, k),
            super::states::layered_get(old, k),
        ) {
            (None, None) => false,
            (Some(a), Some(b)) => !equal(&Value::from_json(a), &Value::from_json(b)),
            _ => true,
        }
    }))
}

/// `changed(x)` for a node-independent `x`, evaluated once (for [`super::Engine::share`]).
pub(crate) fn changed_of<'a>(it: &mut Interp<'a>, node: Node<'a>) -> R<bool> {
    let n = match it.new_state() {
        Some(data) => it.eval_with(node, &[data])?,
        None => it.eval(node)?,
    };
    if !has_old(it) {
        return Ok(true);
    }
    let old = it.old_state().unwrap_or(Value::Null);
    let o = match it.eval_with(node, &[old]) {
        Ok(v) => v,
        Err(f)
            if matches!(
                *f.kind,
                EvalErrorKind::StepLimit(_) | EvalErrorKind::TooDeep(_)
            ) =>
        {
            return Err(f)
        }
        Err(_) => Value::Undef,
    };
    Ok(!equal(&n, &o))
}

fn changed<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    Ok(Value::Bool(changed_at(it, c, 0)?))
}

fn changed_all<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    for i in 0..c.slots.len() {
        if !changed_at(it, c, i)? {
            return Ok(Value::Bool(false));
        }
    }
    Ok(Value::Bool(true))
}

fn changed_any<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    for i in 0..c.slots.len() {
        if changed_at(it, c, i)? {
            return Ok(Value::Bool(true));
        }
    }
    Ok(Value::Bool(false))
}

/// What `a` has that `b` lacks: dictionary entries missing or different in `b`, list items not in
/// `b`, or `a` itself when scalars differ (`null` when equal).
pub fn structural_diff<'a>(a: &Value<'a>, b: &Value<'a>) -> Value<'a> {
    if matches!(b, Value::Undef) {
        return a.clone();
    }
    if matches!(a, Value::Undef) {
        return Value::Null;
    }
    if a.is_dict() && b.is_dict() {
        let out: IndexMap<Value<'a>, Value<'a>> = dict_items(a)
            .into_iter()
            .filter(|(k, v)| b.dict_get(k).is_none_or(|w| !equal(v, &w)))
            .collect();
        return Value::Dict(Rc::new(out));
    }
    let seq = |v: &Value<'a>| matches!(v.view(), View::JList(_) | View::List(_) | View::Set(_));
    if seq(a) && seq(b) {
        let (mine, theirs) = (seq_items(a), seq_items(b));
        // An item equal to the one at its place in the old list is in it: a list that grew or
        // shrank at its end needs no hashing. The rest are looked for in the old list (hashed
        // when there are many).
        let missing: Vec<usize> = (0..mine.len())
            .filter(|&i| !theirs.get(i).is_some_and(|t| equal(&mine[i], t)))
            .collect();
        let kept: Vec<usize> = if missing.len() <= 8 {
            missing
                .into_iter()
                .filter(|&i| !theirs.iter().any(|t| equal(&mine[i], t)))
                .collect()
        } else {
            let set: indexmap::IndexSet<&Value<'a>> = theirs.iter().collect();
            missing
                .into_iter()
                .filter(|&i| !set.contains(&mine[i]))
                .collect()
        };
        return Value::list(kept.into_iter().map(|i| mine[i].clone()).collect());
    }
    if equal(a, b) {
        Value::Null
    } else {
        a.clone()
    }
}

fn added<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let n = new_value(it, c, 0)?;
    let o = old_value(it, c, 0)?;
    Ok(structural_diff(&n, &o))
}

fn deleted<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let n = new_value(it, c, 0)?;
    let o = old_value(it, c, 0)?;
    if matches!(o, Value::Undef) {
        return Ok(Value::Null);
    }
    Ok(structural_diff(&o, &n))
}

fn is_undef<'a>(_: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    Ok(Value::Bool(matches!(c.this()?, Value::Undef)))
}

fn json_of<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<serde_json::Value> {
    let this = c.this()?.clone();
    let this = match this {
        Value::Gen(_) => Value::list(this_items(it, c)?),
        v => v,
    };
    to_json(&this).ok_or_else(|| {
        EvalErrorKind::Type(format!("a {} has no JSON form", this.type_name())).into()
    })
}

fn to_json_fn<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let j = json_of(it, c)?;
    let s = j.to_string();
    it.check_bytes(s.len())?;
    Ok(Value::str(&s))
}

fn to_yaml_fn<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let j = json_of(it, c)?;
    let s = serde_yaml_ng::to_string(&j)
        .map_err(|e| EvalErrorKind::Value(format!("cannot write YAML: {e}")))?;
    it.check_bytes(s.len())?;
    Ok(Value::str(&s))
}

/// The items of a list read in place from the input: a JSON list, or a JSON dictionary's values.
#[derive(Clone, Copy)]
enum Items<'a> {
    List(&'a [crate::json::Json]),
    Values(&'a Map),
}

impl<'a> Items<'a> {
    fn len(self) -> usize {
        match self {
            Items::List(l) => l.len(),
            Items::Values(m) => m.len(),
        }
    }

    /// Whether `item` (the one at `at`, under `key` for dictionary values) is among these items,
    /// looked for at its own place first.
    fn holds(self, at: usize, key: Option<&str>, item: &crate::json::Json) -> bool {
        let same = |j: &crate::json::Json| equal(&Value::from_json(j), &Value::from_json(item));
        let here = match (self, key) {
            (Items::List(l), _) => l.get(at),
            (Items::Values(m), Some(k)) => super::value::json_get(m, k),
            (Items::Values(_), None) => None,
        };
        if here.is_some_and(same) {
            return true;
        }
        match self {
            Items::List(l) => l.iter().any(same),
            Items::Values(m) => m.values().any(same),
        }
    }
}

/// `arg` evaluated in the current (`old` false) or last deployed state as `added()` and
/// `deleted()` evaluate it, when it is a list read in place (`D.values()` of a JSON dictionary
/// `D`, or a JSON list). `Ok(None)`: undefined (the old state lacks it); `Err(())`: anything else.
fn items_in_state<'a>(
    it: &mut Interp<'a>,
    arg: Node<'a>,
    old: bool,
) -> Result<Option<Items<'a>>, ()> {
    let (of, values) = match arg.kind() {
        Kind::Method {
            recv,
            name,
            args,
            safe: false,
        } if name == "values" && args.is_empty() => (recv, true),
        _ => (arg, false),
    };
    let v = if !old {
        let r = if it.states.new.is_none() && it.layers.is_some() {
            it.eval_in_state(of, StateRoot::New)
        } else {
            match it.new_state() {
                Some(data) => it.eval_with(of, &[data]),
                None => it.eval(of),
            }
        };
        r.map_err(|_| ())?
    } else {
        let layered_old = it.layers.is_some_and(|l| l.old.is_some());
        let r = if it.states.old.is_none() && !it.states.forced && layered_old {
            it.eval_in_state(of, StateRoot::Old)
        } else {
            let old = match it.old_state() {
                Some(data) if !it.states.forced => data,
                _ => Value::Dict(Rc::new(IndexMap::new())),
            };
            it.eval_with(of, &[old])
        };
        match r {
            Ok(v) => v,
            Err(f)
                if matches!(
                    *f.kind,
                    EvalErrorKind::StepLimit(_) | EvalErrorKind::TooDeep(_)
                ) =>
            {
                return Err(())
            }
            Err(_) => return Ok(None),
        }
    };
    match (v, values) {
        (Value::Json(crate::json::Json::Object(m)), true) => Ok(Some(Items::Values(m))),
        (Value::Json(crate::json::Json::Array(l)), false) => Ok(Some(Items::List(l))),
        _ => Err(()),
    }
}

/// `x in added(E).key` (or `deleted`) where `E` is a list read in place in both states: whether
/// an item of the new list that the old one lacks (the reverse for `deleted`) has `x` at `key`,
/// without building the difference. Each item's `key` is compared first; only items whose `key`
/// matches are looked for in the other list (at their own place, or under their own dictionary
/// key, first). `None` when the fast way does not apply (an item without `key`, anything not
/// read in place, a failure): the caller evaluates the expression as written, with the same
/// result or error as ever.
pub(crate) fn in_diff_key<'a>(it: &mut Interp<'a>, x: &Value<'a>, rhs: Node<'a>) -> Option<bool> {
    let Kind::Member {
        recv,
        rhs: key,
        safe: false,
    } = rhs.kind()
    else {
        return None;
    };
    let (Kind::Call(name, args), Kind::Word(key)) = (recv.kind(), key.kind()) else {
        return None;
    };
    let deleted = match name {
        "added" => false,
        "deleted" => true,
        _ => return None,
    };
    let arg = args.one()?;
    let new = items_in_state(it, arg, false).ok()??;
    let old = items_in_state(it, arg, true).ok()?;
    let (mine, theirs) = if deleted {
        // `deleted()` of an undefined old value is `null`, whose `.key` fails.
        (old?, Some(new))
    } else {
        (new, old)
    };
    it.tick(mine.len() as u64).ok()?;
    let mut found = false;
    // A string equals only a string of the same text.
    let text = x.as_str();
    let mut check = |at: usize, name: Option<&str>, item: &'a crate::json::Json| {
        let crate::json::Json::Object(m) = item else {
            return None;
        };
        let v = super::value::json_get(m, key)?;
        let hit = match (text, v) {
            (Some(t), crate::json::Json::String(s)) => super::value::str_eq(t, s),
            (Some(_), _) => false,
            (None, v) => equal(&Value::from_json(v), x),
        };
        if hit && !found && !theirs.is_some_and(|t| t.holds(at, name, item)) {
            found = true;
        }
        Some(())
    };
    match mine {
        Items::List(l) => {
            for (at, item) in l.iter().enumerate() {
                check(at, None, item)?;
            }
        }
        Items::Values(m) => {
            for (at, (k, item)) in m.iter().enumerate() {
                check(at, Some(k), item)?;
            }
        }
    }
    Some(found)
}
