//! Collections: list, dict, set and their operations (get, keys, insert, delete, set algebra, ...).

use std::rc::Rc;

use indexmap::{IndexMap, IndexSet};

use super::{get, int_or, need, this_items};
use crate::errors::{type_err, R};
use crate::registry::{Call, Engine, Form, Interp, Spec};
use crate::value::{dict_items, Value, View};

/// Registers the collection functions.
pub fn register(e: &mut Engine) {
    e.register("list", Form::Function, Spec::varargs(0), list);
    e.register("toList", Form::Method, Spec::new(&[], 0), to_list);
    e.register("dict", Form::Function, Spec::any(), dict);
    e.register(
        "toDict",
        Form::Method,
        Spec::new(&["keySelector", "valueSelector"], 1),
        to_dict,
    );
    e.register("set", Form::Function, Spec::varargs(0), set_fn);
    e.register("set", Form::Method, Spec::any(), dict_set);
    e.register("toSet", Form::Method, Spec::new(&[], 0), to_set);
    e.register(
        "get",
        Form::Method,
        Spec::new(&["key", "default"], 1),
        dict_get,
    );
    e.register("keys", Form::Method, Spec::new(&[], 0), keys);
    e.register("values", Form::Method, Spec::new(&[], 0), values);
    e.register("items", Form::Method, Spec::new(&[], 0), items);
    e.register("contains", Form::Method, Spec::new(&["value"], 1), contains);
    e.register(
        "containsKey",
        Form::Method,
        Spec::new(&["key"], 1),
        contains_key,
    );
    e.register(
        "containsValue",
        Form::Method,
        Spec::new(&["value"], 1),
        contains_value,
    );
    e.register("flatten", Form::Method, Spec::new(&["depth"], 0), flatten);
    e.register(
        "insert",
        Form::Method,
        Spec::new(&["position", "value"], 2),
        insert,
    );
    e.register(
        "insertMany",
        Form::Method,
        Spec::new(&["position", "values"], 2),
        insert_many,
    );
    e.register("delete", Form::Method, Spec::varargs(1), delete);
    e.register(
        "deleteAll",
        Form::Method,
        Spec::new(&["keys"], 1),
        delete_all,
    );
    e.register(
        "replaceMany",
        Form::Method,
        Spec::new(&["position", "values", "count"], 2),
        replace_many,
    );
    e.register("union", Form::Method, Spec::varargs(1), union);
    e.register(
        "intersect",
        Form::Method,
        Spec::new(&["other"], 1),
        intersect,
    );
    e.register(
        "difference",
        Form::Method,
        Spec::new(&["other"], 1),
        difference,
    );
    e.register(
        "symmetricDifference",
        Form::Method,
        Spec::new(&["other"], 1),
        symmetric_difference,
    );
    e.register("add", Form::Method, Spec::varargs(0), set_add);
    e.register("remove", Form::Method, Spec::varargs(0), set_remove);
    e.register("isList", Form::Function, Spec::new(&["value"], 1), is_list);
    e.register("isDict", Form::Function, Spec::new(&["value"], 1), is_dict);
    e.register("isSet", Form::Function, Spec::new(&["value"], 1), is_set);
}

/// Spreads query results and lazy sequences; keeps lists and scalars as single items.
fn spread<'a>(it: &mut Interp<'a>, v: Value<'a>, out: &mut Vec<Value<'a>>) -> R<()> {
    match &v {
        Value::Iter(l) => out.extend(l.iter().cloned()),
        Value::Gen(_) => out.extend(it.seq(&v, "list")?),
        _ => out.push(v),
    }
    it.check_len(out.len())
}

fn list<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let mut out = Vec::new();
    for i in 0..c.slots.len() {
        let v = need(it, c, i)?;
        spread(it, v, &mut out)?;
    }
    it.new_list(out)
}

fn to_list<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let items = this_items(it, c)?;
    it.new_list(items)
}

fn pair<'a>(it: &mut Interp<'a>, v: &Value<'a>) -> R<(Value<'a>, Value<'a>)> {
    let items = it.seq(v, "dict")?;
    match <[Value<'a>; 2]>::try_from(items) {
        Ok([k, v]) => Ok((k, v)),
        Err(_) => type_err("dict() needs pairs of two items"),
    }
}

fn dict<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let mut out = IndexMap::new();
    for i in 0..c.slots.len() {
        let v = need(it, c, i)?;
        let pairs = it.seq(&v, "dict")?;
        for p in pairs {
            let (k, v) = pair(it, &p)?;
            out.insert(k, v);
            it.check_len(out.len())?;
        }
    }
    for (k, v) in &c.maps {
        let k = it.eval(k)?;
        let v = it.eval(v)?;
        out.insert(k, v);
    }
    it.check_len(out.len())?;
    Ok(Value::Dict(Rc::new(out)))
}

fn to_dict<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let items = this_items(it, c)?;
    let mut out = IndexMap::new();
    for v in items {
        let k = it.apply(c.slot(0), std::slice::from_ref(&v))?;
        let val = if c.has(1) {
            it.apply(c.slot(1), &[v])?
        } else {
            v
        };
        out.insert(k, val);
    }
    it.check_len(out.len())?;
    Ok(Value::Dict(Rc::new(out)))
}

fn set_fn<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let mut items = Vec::new();
    for i in 0..c.slots.len() {
        let v = need(it, c, i)?;
        spread(it, v, &mut items)?;
    }
    Ok(Value::Set(Rc::new(items.into_iter().collect())))
}

fn dict_set<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let this = c.this()?.clone();
    if !this.is_dict() {
        return Err(c.no_match("set() as a method needs a dictionary"));
    }
    let mut out: IndexMap<Value<'a>, Value<'a>> = dict_items(&this).into_iter().collect();
    if c.slots.len() == 2 {
        let k = need(it, c, 0)?;
        let v = need(it, c, 1)?;
        out.insert(k, v);
    } else if c.slots.len() == 1 {
        let d = need(it, c, 0)?;
        out.extend(dict_items(&d));
    } else if !c.slots.is_empty() {
        return Err(c.no_match("set(key, value) or set(key => value, ...)"));
    }
    for (k, v) in &c.maps {
        let k = it.eval(k)?;
        let v = it.eval(v)?;
        out.insert(k, v);
    }
    it.check_len(out.len())?;
    Ok(Value::Dict(Rc::new(out)))
}

fn to_set<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let items = this_items(it, c)?;
    Ok(Value::Set(Rc::new(items.into_iter().collect())))
}

fn need_dict<'a>(c: &Call<'a>) -> R<Value<'a>> {
    let this = c.this()?.clone();
    if !this.is_dict() {
        return Err(c.no_match(format!("needs a dictionary, not a {}", this.type_name())));
    }
    Ok(this)
}

fn dict_get<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let this = need_dict(c)?;
    let key = need(it, c, 0)?;
    match this.dict_get(&key) {
        Some(v) => Ok(v),
        None => Ok(get(it, c, 1)?.unwrap_or(Value::Null)),
    }
}

fn keys<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let this = need_dict(c)?;
    it.new_iter(dict_items(&this).into_iter().map(|(k, _)| k).collect())
}

fn values<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let this = need_dict(c)?;
    it.new_iter(dict_items(&this).into_iter().map(|(_, v)| v).collect())
}

fn items<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let this = need_dict(c)?;
    it.new_iter(
        dict_items(&this)
            .into_iter()
            .map(|(k, v)| Value::list(vec![k, v]))
            .collect(),
    )
}

fn contains<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let this = c.this()?.clone();
    let v = need(it, c, 0)?;
    match super::operators::contains(it, &this, &v)? {
        Some(b) => Ok(Value::Bool(b)),
        None => Err(c.no_match("contains needs a collection")),
    }
}

fn contains_key<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let this = need_dict(c)?;
    let k = need(it, c, 0)?;
    Ok(Value::Bool(this.dict_get(&k).is_some()))
}

fn contains_value<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let this = need_dict(c)?;
    let v = need(it, c, 0)?;
    Ok(Value::Bool(dict_items(&this).iter().any(|(_, x)| *x == v)))
}

fn flatten_into<'a>(
    it: &mut Interp<'a>,
    v: Value<'a>,
    depth: i64,
    level: usize,
    out: &mut Vec<Value<'a>>,
) -> R<()> {
    if depth != 0 && v.is_iterable() {
        if level > crate::value::MAX_NESTING {
            return type_err("flatten: the collection is nested too deeply");
        }
        for x in it.seq(&v, "flatten")? {
            flatten_into(it, x, depth - 1, level + 1, out)?;
        }
    } else {
        out.push(v);
        it.check_len(out.len())?;
    }
    Ok(())
}

fn flatten<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let depth = int_or(it, c, 0, -1)?;
    let items = this_items(it, c)?;
    let mut out = Vec::new();
    for v in items {
        flatten_into(it, v, depth, 0, &mut out)?;
    }
    it.new_iter(out)
}

/// Python's list index normalisation for insert-like operations.
fn clamp_index(i: i64, len: usize) -> usize {
    let n = len as i64;
    let j = if i < 0 { (i + n).max(0) } else { i.min(n) };
    j as usize
}

fn list_receiver<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<(Vec<Value<'a>>, bool)> {
    let this = c.this()?.clone();
    match this.view() {
        View::Set(_) => Err(c.no_match("sets have no positions")),
        View::JList(_) | View::List(_) | View::Gen => {
            let lazy = matches!(this, Value::Iter(_) | Value::Gen(_));
            Ok((it.seq(&this, c.name)?, lazy))
        }
        _ => Err(c.no_match(format!("needs a list, not a {}", this.type_name()))),
    }
}

fn insert_values<'a>(it: &mut Interp<'a>, c: &Call<'a>, values: Vec<Value<'a>>) -> R<Value<'a>> {
    let pos = int_or(it, c, 0, 0)?;
    let (mut items, lazy) = list_receiver(it, c)?;
    if lazy && pos < 0 {
        // A query result has no end to count from: negative positions insert nothing.
        return it.new_iter(items);
    }
    let at = clamp_index(pos, items.len());
    items.splice(at..at, values);
    if lazy {
        it.new_iter(items)
    } else {
        it.new_list(items)
    }
}

fn insert<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let v = need(it, c, 1)?;
    insert_values(it, c, vec![v])
}

fn insert_many<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let v = need(it, c, 1)?;
    let values = it.seq(&v, "insertMany")?;
    let this = c.this()?.clone();
    if int_or(it, c, 0, 0)? < 0 && !matches!(this, Value::Iter(_) | Value::Gen(_)) {
        // YAQL inserts many items before the start for any negative position.
        let mut out = values;
        out.extend(it.seq(&this, "insertMany")?);
        return it.new_list(out);
    }
    insert_values(it, c, values)
}

/// The range `[pos, pos + count)` of a list of `len` items; a negative count runs to the end.
fn span(pos: i64, count: i64, len: usize) -> (usize, usize) {
    let start = clamp_index(pos, len);
    let end = if count < 0 {
        len
    } else {
        start.saturating_add(count as usize).min(len)
    };
    (start, end.max(start))
}

fn delete<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let this = c.this()?.clone();
    if this.is_dict() {
        let mut out: IndexMap<Value<'a>, Value<'a>> = dict_items(&this).into_iter().collect();
        for i in 0..c.slots.len() {
            let k = need(it, c, i)?;
            out.shift_remove(&k);
        }
        return Ok(Value::Dict(Rc::new(out)));
    }
    if c.slots.len() > 2 {
        return Err(c.no_match("delete(position, count)"));
    }
    let pos = int_or(it, c, 0, 0)?;
    let count = int_or(it, c, 1, 1)?;
    let (mut items, _) = list_receiver(it, c)?;
    let (a, b) = span(pos, count, items.len());
    items.drain(a..b);
    it.new_iter(items)
}

fn delete_all<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let this = need_dict(c)?;
    let ks = need(it, c, 0)?;
    let ks = it.seq(&ks, "deleteAll")?;
    let mut out: IndexMap<Value<'a>, Value<'a>> = dict_items(&this).into_iter().collect();
    for k in ks {
        out.shift_remove(&k);
    }
    Ok(Value::Dict(Rc::new(out)))
}

/// `list.replace(position, value, count)` (the string and regex forms live in `strings`).
pub fn list_replace<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let pos = int_or(it, c, 0, 0)?;
    let v = need(it, c, 1)?;
    let count = int_or(it, c, 2, 1)?;
    let (mut items, _) = list_receiver(it, c)?;
    let (a, b) = span(pos, count, items.len());
    items.splice(a..b, [v]);
    it.new_iter(items)
}

fn replace_many<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let pos = int_or(it, c, 0, 0)?;
    let v = need(it, c, 1)?;
    let values = it.seq(&v, "replaceMany")?;
    let count = int_or(it, c, 2, 1)?;
    let (mut items, _) = list_receiver(it, c)?;
    let (a, b) = span(pos, count, items.len());
    items.splice(a..b, values);
    it.new_iter(items)
}

fn as_set<'a>(it: &mut Interp<'a>, v: &Value<'a>, c: &Call<'a>) -> R<IndexSet<Value<'a>>> {
    match v {
        Value::Set(s) => Ok((**s).clone()),
        _ => match it.items(v)? {
            Some(items) => Ok(items.into_iter().collect()),
            None => Err(c.no_match("needs a collection")),
        },
    }
}

fn union<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let this = c.this()?.clone();
    let mut out = as_set(it, &this, c)?;
    for i in 0..c.slots.len() {
        let v = need(it, c, i)?;
        out.extend(as_set(it, &v, c)?);
    }
    it.check_len(out.len())?;
    Ok(Value::Set(Rc::new(out)))
}

fn set_pair<'a>(
    it: &mut Interp<'a>,
    c: &Call<'a>,
) -> R<(IndexSet<Value<'a>>, IndexSet<Value<'a>>)> {
    let this = c.this()?.clone();
    let a = as_set(it, &this, c)?;
    let v = need(it, c, 0)?;
    let b = as_set(it, &v, c)?;
    Ok((a, b))
}

fn intersect<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let (a, b) = set_pair(it, c)?;
    Ok(Value::Set(Rc::new(
        a.into_iter().filter(|v| b.contains(v)).collect(),
    )))
}

fn difference<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let (a, b) = set_pair(it, c)?;
    Ok(Value::Set(Rc::new(
        a.into_iter().filter(|v| !b.contains(v)).collect(),
    )))
}

fn symmetric_difference<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let (a, b) = set_pair(it, c)?;
    let mut out: IndexSet<Value<'a>> = a.iter().filter(|v| !b.contains(*v)).cloned().collect();
    out.extend(b.into_iter().filter(|v| !a.contains(v)));
    Ok(Value::Set(Rc::new(out)))
}

fn set_add<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let this = c.this()?.clone();
    let Value::Set(s) = &this else {
        return Err(c.no_match("add() needs a set"));
    };
    let mut out = (**s).clone();
    for i in 0..c.slots.len() {
        out.insert(need(it, c, i)?);
    }
    it.check_len(out.len())?;
    Ok(Value::Set(Rc::new(out)))
}

fn set_remove<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let this = c.this()?.clone();
    let Value::Set(s) = &this else {
        return Err(c.no_match("remove() needs a set"));
    };
    let mut out = (**s).clone();
    for i in 0..c.slots.len() {
        out.shift_remove(&need(it, c, i)?);
    }
    Ok(Value::Set(Rc::new(out)))
}

fn is_list<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let v = need(it, c, 0)?;
    // A query result is an iterator in YAQL, not a list.
    Ok(Value::Bool(
        !matches!(v, Value::Iter(_)) && matches!(v.view(), View::JList(_) | View::List(_)),
    ))
}

fn is_dict<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let v = need(it, c, 0)?;
    Ok(Value::Bool(v.is_dict()))
}

fn is_set<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let v = need(it, c, 0)?;
    Ok(Value::Bool(matches!(v, Value::Set(_))))
}
