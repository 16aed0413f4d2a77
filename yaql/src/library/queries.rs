//! Queries over collections: where, select, orderBy, groupBy, aggregate, zip, mergeWith, ...

use std::cmp::Ordering;
use std::rc::Rc;

use indexmap::{IndexMap, IndexSet};

use super::{get, int_or, need, this_items, truth};
use crate::ast::BinOp;
use crate::errors::{type_err, EvalErrorKind, R};
use crate::fastpath;
use crate::registry::{Call, Engine, Form, Interp, Slot, Spec};
use crate::value::{compare, dict_items, Gen, Value, View};

/// Registers the queries.
pub fn register(e: &mut Engine) {
    let one = Spec::new(&["predicate"], 1);
    e.register("where", Form::Method, one, where_);
    e.register("filter", Form::Method, one, where_);
    e.register("select", Form::Method, Spec::new(&["selector"], 1), select);
    e.register("map", Form::Method, Spec::new(&["selector"], 1), select);
    e.register(
        "selectMany",
        Form::Method,
        Spec::new(&["selector"], 1),
        select_many,
    );
    e.register("any", Form::Method, Spec::new(&["predicate"], 0), any);
    e.register("all", Form::Method, Spec::new(&["predicate"], 0), all);
    e.register("first", Form::Method, Spec::new(&["default"], 0), first);
    e.register("last", Form::Method, Spec::new(&["default"], 0), last);
    e.register("single", Form::Method, Spec::new(&[], 0), single);
    e.register("len", Form::Both, Spec::new(&[], 0), len);
    e.register("count", Form::Method, Spec::new(&[], 0), count);
    e.register(
        "distinct",
        Form::Both,
        Spec::new(&["keySelector"], 0),
        distinct,
    );
    e.register(
        "orderBy",
        Form::Method,
        Spec::new(&["selector"], 1),
        order_by,
    );
    e.register(
        "orderByDescending",
        Form::Method,
        Spec::new(&["selector"], 1),
        order_by_desc,
    );
    e.register(
        "thenBy",
        Form::Method,
        Spec::new(&["selector"], 1),
        order_by,
    );
    e.register(
        "thenByDescending",
        Form::Method,
        Spec::new(&["selector"], 1),
        order_by_desc,
    );
    e.register(
        "groupBy",
        Form::Method,
        Spec::new(&["keySelector", "valueSelector", "aggregator"], 1),
        group_by,
    );
    e.register("skip", Form::Method, Spec::new(&["count"], 1), skip);
    e.register("take", Form::Method, Spec::new(&["count"], 1), take);
    e.register("limit", Form::Method, Spec::new(&["count"], 1), take);
    e.register("skipWhile", Form::Method, one, skip_while);
    e.register("takeWhile", Form::Method, one, take_while);
    e.register("indexWhere", Form::Method, one, index_where);
    e.register("lastIndexWhere", Form::Method, one, last_index_where);
    e.register(
        "aggregate",
        Form::Method,
        Spec::new(&["selector", "seed"], 1),
        aggregate,
    );
    e.register(
        "reduce",
        Form::Method,
        Spec::new(&["selector", "seed"], 1),
        aggregate,
    );
    e.register(
        "accumulate",
        Form::Method,
        Spec::new(&["selector", "seed"], 1),
        accumulate,
    );
    e.register("sum", Form::Method, Spec::new(&["initial"], 0), sum);
    e.register("max", Form::Method, Spec::new(&["initial"], 0), max_of);
    e.register("min", Form::Method, Spec::new(&["initial"], 0), min_of);
    e.register("append", Form::Method, Spec::varargs(0), append);
    e.register("enumerate", Form::Both, Spec::new(&["start"], 0), enumerate);
    e.register(
        "range",
        Form::Function,
        Spec::new(&["start", "stop", "step"], 1),
        range,
    );
    e.register(
        "sequence",
        Form::Function,
        Spec::new(&["start", "step"], 0),
        sequence,
    );
    e.register("repeat", Form::Method, Spec::new(&["times"], 0), repeat);
    e.register("cycle", Form::Method, Spec::new(&[], 0), cycle);
    e.register("zip", Form::Method, Spec::varargs(1), zip);
    e.register(
        "zipLongest",
        Form::Method,
        Spec {
            params: &[],
            min: 1,
            varargs: true,
            kwargs: true,
        },
        zip_longest,
    );
    e.register(
        "mergeWith",
        Form::Method,
        Spec::new(&["other", "listMerger", "itemMerger", "maxLevels"], 1),
        merge_with,
    );
    e.register("slice", Form::Method, Spec::new(&["length"], 1), slice);
    e.register("splitWhere", Form::Method, one, split_where);
    e.register("sliceWhere", Form::Method, one, slice_where);
    e.register("splitAt", Form::Method, Spec::new(&["index"], 1), split_at);
    e.register(
        "defaultIfEmpty",
        Form::Method,
        Spec::new(&["default"], 1),
        default_if_empty,
    );
    e.register(
        "generate",
        Form::Function,
        Spec::new(
            &["initial", "predicate", "producer", "selector", "decycle"],
            3,
        ),
        generate,
    );
    e.register(
        "generateMany",
        Form::Function,
        Spec::new(
            &["initial", "producer", "selector", "decycle", "depthFirst"],
            2,
        ),
        generate_many,
    );
    e.register("reverse", Form::Method, Spec::new(&[], 0), reverse);
    e.register(
        "isIterable",
        Form::Function,
        Spec::new(&["value"], 1),
        is_iterable,
    );
    e.register(
        "memberOf",
        Form::Method,
        Spec::new(&["collection"], 1),
        member_of,
    );
}

fn where_<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let this = c.this()?.clone();
    let fast = match c.slot(0) {
        Slot::Ast(n) => {
            fastpath::compile(*n, it.engine.lazy_queries()).filter(fastpath::reads_keys)
        }
        _ => None,
    };
    // Items of input data go through the shortcut when it applies.
    let keep = |it: &mut Interp<'a>, v: &Value<'a>| -> R<bool> {
        let shortcut = match (&fast, v) {
            (Some(f), Value::Json(j)) => fastpath::run(f, j).map(|r| r.truthy()),
            _ => None,
        };
        match shortcut {
            Some(k) => {
                it.tick(1)?;
                Ok(k)
            }
            None => truth(it, c, 0, std::slice::from_ref(v)),
        }
    };
    // Borrowed lists are filtered without collecting them first.
    if let View::JList(l) = this.view() {
        let mut out = Vec::new();
        for j in l {
            let v = Value::from_json(j);
            if keep(it, &v)? {
                out.push(v);
            }
        }
        return it.new_iter(out);
    }
    let items = this_items(it, c)?;
    let mut out = Vec::new();
    for v in items {
        if keep(it, &v)? {
            out.push(v);
        }
    }
    it.new_iter(out)
}

fn select<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let items = this_items(it, c)?;
    let mut out = Vec::with_capacity(items.len());
    for v in items {
        out.push(it.apply(c.slot(0), &[v])?);
    }
    it.new_iter(out)
}

fn select_many<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let items = this_items(it, c)?;
    let mut out = Vec::new();
    for v in items {
        let r = it.apply(c.slot(0), &[v])?;
        match it.items(&r)? {
            Some(inner) => out.extend(inner),
            None => out.push(r),
        }
        it.check_len(out.len())?;
    }
    it.new_iter(out)
}

fn any<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let items = this_items(it, c)?;
    for v in items {
        if !c.has(0) || truth(it, c, 0, &[v])? {
            return Ok(Value::Bool(true));
        }
    }
    Ok(Value::Bool(false))
}

fn all<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let items = this_items(it, c)?;
    for v in items {
        let ok = if c.has(0) {
            truth(it, c, 0, std::slice::from_ref(&v))?
        } else {
            v.truthy()
        };
        if !ok {
            return Ok(Value::Bool(false));
        }
    }
    Ok(Value::Bool(true))
}

fn empty_seq() -> crate::errors::Fail {
    EvalErrorKind::Sequence("the collection is empty".into()).into()
}

fn first<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let this = c.this()?.clone();
    if let Value::Gen(g) = &this {
        if let Some(v) = crate::value::gen_take(g, 1).pop() {
            return Ok(v);
        }
    }
    // A list is read in place: only its first item is taken.
    let found = match &this {
        Value::Iter(l) | Value::List(l) => l.first().cloned(),
        Value::Json(crate::json::Json::Array(l)) => l.first().map(Value::from_json),
        _ => this_items(it, c)?.into_iter().next(),
    };
    match found {
        Some(v) => Ok(v),
        None if c.has(0) => need(it, c, 0),
        None => Err(empty_seq()),
    }
}

fn last<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let items = this_items(it, c)?;
    match items.into_iter().last() {
        Some(v) => Ok(v),
        None if c.has(0) => need(it, c, 0),
        None => Err(empty_seq()),
    }
}

fn single<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let items = this_items(it, c)?;
    if items.len() != 1 {
        return Err(
            EvalErrorKind::Sequence(format!("expected one item, found {}", items.len())).into(),
        );
    }
    Ok(items.into_iter().next().unwrap_or(Value::Null))
}

fn len<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let this = c.this()?.clone();
    if let Value::Gen(_) = this {
        return Ok(Value::Int(it.seq(&this, "len")?.len() as i64));
    }
    match this.len() {
        Some(n) => Ok(Value::Int(n as i64)),
        None => Err(c.no_match(format!("a {} has no length", this.type_name()))),
    }
}

fn count<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    Ok(Value::Int(this_items(it, c)?.len() as i64))
}

fn distinct<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let items = this_items(it, c)?;
    let mut seen = IndexSet::new();
    let mut out = Vec::new();
    for v in items {
        let key = if c.has(0) {
            it.apply(c.slot(0), std::slice::from_ref(&v))?
        } else {
            v.clone()
        };
        if seen.insert(key) {
            out.push(v);
        }
    }
    it.new_iter(out)
}

fn sort_keys<'a>(keys: &mut [(Vec<(Value<'a>, bool)>, Value<'a>)]) -> R<()> {
    let mut bad = false;
    keys.sort_by(|(a, _), (b, _)| {
        for ((x, desc), (y, _)) in a.iter().zip(b.iter()) {
            let o = compare(x, y).unwrap_or_else(|| {
                bad = true;
                Ordering::Equal
            });
            let o = if *desc { o.reverse() } else { o };
            if o != Ordering::Equal {
                return o;
            }
        }
        Ordering::Equal
    });
    if bad {
        return type_err("cannot order values of different types");
    }
    Ok(())
}

fn order<'a>(it: &mut Interp<'a>, c: &Call<'a>, desc: bool) -> R<Value<'a>> {
    let this = c.this()?.clone();
    let previous = match &this {
        Value::Iter(rc) if c.name.starts_with("then") => it
            .orderings
            .iter()
            .rev()
            .find(|(l, _)| Rc::ptr_eq(l, rc))
            .map(|(_, k)| k.clone()),
        _ => None,
    };
    let items = this_items(it, c)?;
    let mut keyed = Vec::with_capacity(items.len());
    for (i, v) in items.into_iter().enumerate() {
        let mut k: Vec<(Value<'a>, bool)> = previous
            .as_ref()
            .and_then(|p| p.get(i).cloned())
            .unwrap_or_default();
        k.push((it.apply(c.slot(0), std::slice::from_ref(&v))?, desc));
        keyed.push((k, v));
    }
    sort_keys(&mut keyed)?;
    let (keys, values): (Vec<_>, Vec<_>) = keyed.into_iter().unzip();
    it.check_len(values.len())?;
    let rc = Rc::new(values);
    it.orderings.push((rc.clone(), keys));
    Ok(Value::Iter(rc))
}

fn order_by<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    order(it, c, false)
}

fn order_by_desc<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    order(it, c, true)
}

fn fallback_ok(kind: &EvalErrorKind) -> bool {
    matches!(
        kind,
        EvalErrorKind::NoMatchingFunction(..)
            | EvalErrorKind::NoMatchingMethod(..)
            | EvalErrorKind::IndexOutOfRange(_)
    )
}

fn group_by<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let items = this_items(it, c)?;
    let mut groups: IndexMap<Value<'a>, Vec<Value<'a>>> = IndexMap::new();
    for v in items {
        let k = it.apply(c.slot(0), std::slice::from_ref(&v))?;
        let val = if c.has(1) {
            it.apply(c.slot(1), &[v])?
        } else {
            v
        };
        groups.entry(k).or_default().push(val);
    }
    let mut out = Vec::with_capacity(groups.len());
    for (k, vals) in groups {
        let vals = Value::list(vals);
        if !c.has(2) {
            out.push(Value::list(vec![k, vals]));
            continue;
        }
        match it.apply(c.slot(2), std::slice::from_ref(&vals)) {
            Ok(r) => out.push(Value::list(vec![k, r])),
            Err(f) if fallback_ok(&f.kind) => {
                // YAQL 1.1 form: the aggregator gets `[key, values]` and returns the pair.
                let pair = Value::list(vec![k, vals]);
                out.push(it.apply(c.slot(2), &[pair])?);
            }
            Err(f) => return Err(f),
        }
    }
    it.new_iter(out)
}

fn count_arg<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<usize> {
    Ok(usize::try_from(int_or(it, c, 0, 0)?).unwrap_or(0))
}

fn skip<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let n = count_arg(it, c)?;
    let items = this_items(it, c)?;
    it.new_iter(items.into_iter().skip(n).collect())
}

fn take<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let n = count_arg(it, c)?;
    if let Some(Value::Gen(g)) = &c.recv {
        let out = crate::value::gen_take(g, n.min(it.limits.max_collection + 1));
        return it.new_iter(out);
    }
    let items = this_items(it, c)?;
    it.new_iter(items.into_iter().take(n).collect())
}

fn skip_while<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let items = this_items(it, c)?;
    let mut out = Vec::new();
    let mut skipping = true;
    for v in items {
        if skipping && truth(it, c, 0, std::slice::from_ref(&v))? {
            continue;
        }
        skipping = false;
        out.push(v);
    }
    it.new_iter(out)
}

fn take_while<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let items = this_items(it, c)?;
    let mut out = Vec::new();
    for v in items {
        if !truth(it, c, 0, std::slice::from_ref(&v))? {
            break;
        }
        out.push(v);
    }
    it.new_iter(out)
}

fn index_where<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let items = this_items(it, c)?;
    for (i, v) in items.into_iter().enumerate() {
        if truth(it, c, 0, &[v])? {
            return Ok(Value::Int(i as i64));
        }
    }
    Ok(Value::Int(-1))
}

fn last_index_where<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let items = this_items(it, c)?;
    let mut found = -1;
    for (i, v) in items.into_iter().enumerate() {
        if truth(it, c, 0, &[v])? {
            found = i as i64;
        }
    }
    Ok(Value::Int(found))
}

fn aggregate<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let items = this_items(it, c)?;
    let mut iter = items.into_iter();
    let mut acc = match get(it, c, 1)? {
        Some(seed) => seed,
        None => match iter.next() {
            Some(v) => v,
            None => return type_err("aggregate of an empty collection with no seed"),
        },
    };
    for v in iter {
        acc = it.apply(c.slot(0), &[acc, v])?;
    }
    Ok(acc)
}

fn accumulate<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let items = this_items(it, c)?;
    let mut iter = items.into_iter();
    let mut acc = match get(it, c, 1)? {
        Some(seed) => seed,
        None => match iter.next() {
            Some(v) => v,
            None => return it.new_iter(Vec::new()),
        },
    };
    let mut out = vec![acc.clone()];
    for v in iter {
        acc = it.apply(c.slot(0), &[acc, v])?;
        out.push(acc.clone());
    }
    it.new_iter(out)
}

fn sum<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let items = this_items(it, c)?;
    let mut iter = items.into_iter();
    let mut acc = match get(it, c, 0)? {
        Some(v) => v,
        None => match iter.next() {
            Some(v) => v,
            None => return type_err("sum of an empty collection with no initial value"),
        },
    };
    for v in iter {
        acc = super::operators::binary(it, BinOp::Add, acc, v)?;
    }
    Ok(acc)
}

fn extreme<'a>(it: &mut Interp<'a>, c: &Call<'a>, want: Ordering) -> R<Value<'a>> {
    let items = this_items(it, c)?;
    let mut best: Option<Value<'a>> = None;
    for v in items {
        best = Some(match best {
            None => v,
            Some(b) => match compare(&v, &b) {
                Some(o) if o == want => v,
                Some(_) => b,
                None => return type_err("cannot compare values of different types"),
            },
        });
    }
    match best {
        Some(b) => Ok(b),
        None => match get(it, c, 0)? {
            Some(v) => Ok(v),
            None => type_err("max/min of an empty collection"),
        },
    }
}

fn max_of<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    extreme(it, c, Ordering::Greater)
}

fn min_of<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    extreme(it, c, Ordering::Less)
}

fn append<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let mut items = this_items(it, c)?;
    for i in 0..c.slots.len() {
        items.push(need(it, c, i)?);
    }
    it.new_iter(items)
}

fn enumerate<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let start = int_or(it, c, 0, 0)?;
    let items = this_items(it, c)?;
    let out = items
        .into_iter()
        .enumerate()
        .map(|(i, v)| Value::list(vec![Value::Int(start.saturating_add(i as i64)), v]))
        .collect();
    it.new_iter(out)
}

fn range<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let (start, stop) = if c.has(1) {
        (int_or(it, c, 0, 0)?, int_or(it, c, 1, 0)?)
    } else {
        (0, int_or(it, c, 0, 0)?)
    };
    let step = int_or(it, c, 2, 1)?;
    if step == 0 {
        return Err(EvalErrorKind::Value("range step cannot be zero".into()).into());
    }
    let (start, stop, step) = (i128::from(start), i128::from(stop), i128::from(step));
    let n = if step > 0 {
        (stop - start + step - 1).max(0) / step
    } else {
        (start - stop - step - 1).max(0) / -step
    };
    it.check_len(usize::try_from(n).unwrap_or(usize::MAX))?;
    // Every item lies between start and stop, both i64, so the casts are exact.
    it.new_iter(
        (0..n)
            .map(|i| Value::Int((start + i * step) as i64))
            .collect(),
    )
}

fn sequence<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let start = int_or(it, c, 0, 0)?;
    let step = int_or(it, c, 1, 1)?;
    Ok(Value::Gen(Rc::new(Gen::Count(start, step))))
}

fn repeat<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let v = c.this()?.clone();
    match get(it, c, 0)? {
        None | Some(Value::Null) => Ok(Value::Gen(Rc::new(Gen::Repeat(v)))),
        Some(n) => {
            let n = usize::try_from(
                n.as_int()
                    .ok_or_else(|| c.no_match("times must be an integer"))?,
            )
            .unwrap_or(0);
            it.check_len(n)?;
            it.new_iter(vec![v; n])
        }
    }
}

fn cycle<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let items = this_items(it, c)?;
    Ok(Value::Gen(Rc::new(Gen::Cycle(items))))
}

fn zip_lists<'a>(
    it: &mut Interp<'a>,
    c: &Call<'a>,
    longest: bool,
    default: Value<'a>,
) -> R<Value<'a>> {
    let mut lists = vec![this_items(it, c)?];
    for i in 0..c.slots.len() {
        let v = need(it, c, i)?;
        lists.push(it.seq(&v, c.name)?);
    }
    let n = if longest {
        lists.iter().map(Vec::len).max()
    } else {
        lists.iter().map(Vec::len).min()
    }
    .unwrap_or(0);
    let out = (0..n)
        .map(|i| {
            Value::list(
                lists
                    .iter()
                    .map(|l| l.get(i).cloned().unwrap_or_else(|| default.clone()))
                    .collect(),
            )
        })
        .collect();
    it.new_iter(out)
}

fn zip<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    zip_lists(it, c, false, Value::Null)
}

fn zip_longest<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let mut default = Value::Null;
    for (k, v) in &c.maps {
        match k.kind() {
            crate::ast::Kind::Word("default") => default = it.eval(v)?,
            _ => return Err(c.no_match("unexpected named argument")),
        }
    }
    zip_lists(it, c, true, default)
}

fn merge<'a>(
    it: &mut Interp<'a>,
    c: &Call<'a>,
    to: &Value<'a>,
    from: &Value<'a>,
    max_levels: i64,
    level: i64,
) -> R<Value<'a>> {
    if level > crate::value::MAX_NESTING as i64 {
        return type_err("mergeWith: the dictionaries are nested too deeply");
    }
    let mut out: IndexMap<Value<'a>, Value<'a>> = dict_items(to).into_iter().collect();
    for (k, vf) in dict_items(from) {
        let merged = match out.get(&k) {
            None => vf,
            Some(vt) => {
                let vt = vt.clone();
                if max_levels != 0 && level + 1 >= max_levels {
                    merge_items(it, c, vt, vf)?
                } else if vt.is_dict() && vf.is_dict() {
                    merge(it, c, &vt, &vf, max_levels, level + 1)?
                } else if is_seq(&vt) && is_seq(&vf) {
                    if c.has(1) {
                        it.apply(c.slot(1), &[vt, vf])?
                    } else {
                        let mut all = it.seq(&vt, "mergeWith")?;
                        all.extend(it.seq(&vf, "mergeWith")?);
                        let set: IndexSet<Value<'a>> = all.into_iter().collect();
                        Value::list(set.into_iter().collect())
                    }
                } else {
                    merge_items(it, c, vt, vf)?
                }
            }
        };
        out.insert(k, merged);
    }
    it.check_len(out.len())?;
    Ok(Value::Dict(Rc::new(out)))
}

fn is_seq(v: &Value<'_>) -> bool {
    matches!(v.view(), View::JList(_) | View::List(_) | View::Set(_))
}

fn merge_items<'a>(
    it: &mut Interp<'a>,
    c: &Call<'a>,
    to: Value<'a>,
    from: Value<'a>,
) -> R<Value<'a>> {
    if c.has(2) {
        it.apply(c.slot(2), &[to, from])
    } else {
        Ok(from)
    }
}

fn merge_with<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let to = c.this()?.clone();
    let from = need(it, c, 0)?;
    if !to.is_dict() || !from.is_dict() {
        return Err(c.no_match("mergeWith merges dictionaries"));
    }
    let levels = int_or(it, c, 3, 0)?;
    merge(it, c, &to, &from, levels, 0)
}

fn slice<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let n = count_arg(it, c)?.max(1);
    let items = this_items(it, c)?;
    it.new_iter(items.chunks(n).map(|ch| Value::list(ch.to_vec())).collect())
}

fn split_where<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let items = this_items(it, c)?;
    let mut out = Vec::new();
    let mut cur = Vec::new();
    for v in items {
        if truth(it, c, 0, std::slice::from_ref(&v))? {
            out.push(Value::list(std::mem::take(&mut cur)));
        } else {
            cur.push(v);
        }
    }
    out.push(Value::list(cur));
    it.new_iter(out)
}

fn slice_where<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let items = this_items(it, c)?;
    let mut out = Vec::new();
    let mut cur: Vec<Value<'a>> = Vec::new();
    let mut prev: Option<bool> = None;
    for v in items {
        let k = truth(it, c, 0, std::slice::from_ref(&v))?;
        if prev.is_some_and(|p| p != k) {
            out.push(Value::list(std::mem::take(&mut cur)));
        }
        prev = Some(k);
        cur.push(v);
    }
    if !cur.is_empty() {
        out.push(Value::list(cur));
    }
    it.new_iter(out)
}

fn split_at<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let n = count_arg(it, c)?;
    let items = this_items(it, c)?;
    let n = n.min(items.len());
    it.new_iter(vec![
        Value::list(items[..n].to_vec()),
        Value::list(items[n..].to_vec()),
    ])
}

fn default_if_empty<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let items = this_items(it, c)?;
    if items.is_empty() {
        return need(it, c, 0);
    }
    it.new_iter(items)
}

fn generate<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let mut cur = need(it, c, 0)?;
    let mut out = Vec::new();
    while truth(it, c, 1, std::slice::from_ref(&cur))? {
        let item = if c.has(3) {
            it.apply(c.slot(3), std::slice::from_ref(&cur))?
        } else {
            cur.clone()
        };
        out.push(item);
        it.check_len(out.len())?;
        cur = it.apply(c.slot(2), &[cur])?;
    }
    it.new_iter(out)
}

fn generate_many<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let initial = need(it, c, 0)?;
    let decycle = get(it, c, 3)?.is_some_and(|v| v.truthy());
    let depth_first = get(it, c, 4)?.is_some_and(|v| v.truthy());
    let mut queue: std::collections::VecDeque<Value<'a>> = match it.items(&initial)? {
        Some(items) => items.into(),
        None => vec![initial].into(),
    };
    let mut seen: IndexSet<Value<'a>> = IndexSet::new();
    let mut out = Vec::new();
    while let Some(v) = queue.pop_front() {
        if decycle && !seen.insert(v.clone()) {
            continue;
        }
        let produced = it.apply(c.slot(1), std::slice::from_ref(&v))?;
        let children = it.seq(&produced, "generateMany")?;
        let item = if c.has(2) {
            it.apply(c.slot(2), std::slice::from_ref(&v))?
        } else {
            v
        };
        out.push(item);
        it.check_len(out.len())?;
        if depth_first {
            for ch in children.into_iter().rev() {
                queue.push_front(ch);
            }
        } else {
            queue.extend(children);
        }
    }
    it.new_iter(out)
}

fn reverse<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let mut items = this_items(it, c)?;
    items.reverse();
    it.new_iter(items)
}

fn is_iterable<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let v = need(it, c, 0)?;
    Ok(Value::Bool(v.is_iterable()))
}

fn member_of<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let v = c.this()?.clone();
    let coll = need(it, c, 0)?;
    match super::operators::contains(it, &coll, &v)? {
        Some(b) => Ok(Value::Bool(b)),
        None => Err(c.no_match("memberOf needs a collection")),
    }
}
