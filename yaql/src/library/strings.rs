//! Strings: case, split, join, trim, replace, substring, search, formatting, ...

use std::rc::Rc;

use super::{get, int_or, need, str_arg, this_str};
use crate::errors::R;
use crate::registry::{Call, Engine, Form, Interp, Slot, Spec};
use crate::value::{dict_items, display_string, Value, View};

/// Registers the string functions.
pub fn register(e: &mut Engine) {
    e.register("toUpper", Form::Method, Spec::new(&[], 0), to_upper);
    e.register("toLower", Form::Method, Spec::new(&[], 0), to_lower);
    e.register(
        "split",
        Form::Method,
        Spec::new(&["separator", "maxSplits"], 0),
        split,
    );
    e.register(
        "rightSplit",
        Form::Method,
        Spec::new(&["separator", "maxSplits"], 0),
        right_split,
    );
    e.register(
        "join",
        Form::Method,
        Spec::new(&["other", "predicate", "selector"], 1),
        join,
    );
    e.register("trim", Form::Method, Spec::new(&["chars"], 0), trim);
    e.register(
        "trimLeft",
        Form::Method,
        Spec::new(&["chars"], 0),
        trim_left,
    );
    e.register(
        "trimRight",
        Form::Method,
        Spec::new(&["chars"], 0),
        trim_right,
    );
    e.register(
        "replace",
        Form::Method,
        Spec {
            params: &["old", "new", "count"],
            min: 0,
            varargs: false,
            // `=>` pairs are matched here: a datetime's parts (`year => 2014`) or the parameters.
            kwargs: true,
        },
        replace,
    );
    e.register(
        "substring",
        Form::Method,
        Spec::new(&["start", "length"], 1),
        substring,
    );
    e.register("startsWith", Form::Method, Spec::varargs(1), starts_with);
    e.register("endsWith", Form::Method, Spec::varargs(1), ends_with);
    e.register("str", Form::Function, Spec::new(&["value"], 1), str_fn);
    e.register("concat", Form::Both, Spec::varargs(0), concat);
    e.register("isEmpty", Form::Both, Spec::new(&[], 0), is_empty);
    e.register("norm", Form::Both, Spec::new(&[], 0), norm);
    e.register(
        "indexOf",
        Form::Method,
        Spec::new(&["item", "start", "length"], 1),
        index_of,
    );
    e.register(
        "lastIndexOf",
        Form::Method,
        Spec::new(&["item", "start", "length"], 1),
        last_index_of,
    );
    e.register(
        "toCharArray",
        Form::Method,
        Spec::new(&[], 0),
        to_char_array,
    );
    e.register("characters", Form::Function, Spec::any(), characters);
    e.register("hex", Form::Function, Spec::new(&["value"], 1), hex);
    e.register(
        "isString",
        Form::Function,
        Spec::new(&["value"], 1),
        is_string,
    );
    e.register("format", Form::Method, Spec::varargs(0), format);
}

fn to_upper<'a>(_: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    Ok(Value::str(&this_str(c)?.to_uppercase()))
}

fn to_lower<'a>(_: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    Ok(Value::str(&this_str(c)?.to_lowercase()))
}

fn strings<'a>(parts: Vec<&str>) -> Vec<Value<'a>> {
    parts.into_iter().map(Value::str).collect()
}

fn split<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    if let Some(Value::Regex(_)) = &c.recv {
        return super::regex::split_on_regex(it, c);
    }
    if let Some(Value::Regex(_)) = get(it, c, 0)? {
        return super::regex::split_string(it, c);
    }
    let s = this_str(c)?;
    let max = int_or(it, c, 1, -1)?;
    let sep = get(it, c, 0)?.and_then(|v| v.as_str().map(str::to_string));
    let parts: Vec<&str> = match (&sep, max) {
        (None, m) if m < 0 => s.split_whitespace().collect(),
        (None, m) => {
            let mut out = Vec::new();
            let mut rest = s.trim_start();
            while !rest.is_empty() {
                if out.len() as i64 == m {
                    out.push(rest);
                    break;
                }
                let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
                out.push(&rest[..end]);
                rest = rest[end..].trim_start();
            }
            out
        }
        (Some(sep), _) if sep.is_empty() => return Err(c.no_match("empty separator")),
        (Some(sep), m) if m < 0 => s.split(sep.as_str()).collect(),
        (Some(sep), m) => s.splitn(m as usize + 1, sep.as_str()).collect(),
    };
    it.new_list(strings(parts))
}

fn right_split<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let s = this_str(c)?;
    let max = int_or(it, c, 1, -1)?;
    let sep = get(it, c, 0)?.and_then(|v| v.as_str().map(str::to_string));
    let mut parts: Vec<&str> = match (&sep, max) {
        (None, _) => s.split_whitespace().rev().collect(),
        (Some(sep), _) if sep.is_empty() => return Err(c.no_match("empty separator")),
        (Some(sep), m) if m < 0 => s.rsplit(sep.as_str()).collect(),
        (Some(sep), m) => s.rsplitn(m as usize + 1, sep.as_str()).collect(),
    };
    parts.reverse();
    it.new_list(strings(parts))
}

fn join_strings<'a>(it: &mut Interp<'a>, items: Vec<Value<'a>>, sep: &str) -> R<Value<'a>> {
    let mut out = String::new();
    for (i, v) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(sep);
        }
        match v.as_str() {
            Some(s) => out.push_str(s),
            None => out.push_str(&display_string(v)),
        }
        it.check_bytes(out.len())?;
    }
    Ok(Value::str(&out))
}

fn join<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let this = c.this()?.clone();
    let other = need(it, c, 0)?;
    if c.slots.len() >= 2 {
        // The query join: pairs of both collections that satisfy the predicate.
        let left = it.seq(&this, "join")?;
        let right = it.seq(&other, "join")?;
        let mut out = Vec::new();
        for l in &left {
            for r in &right {
                let pair = [l.clone(), r.clone()];
                if it.apply(c.slot(1), &pair)?.truthy() {
                    out.push(if c.has(2) {
                        it.apply(c.slot(2), &pair)?
                    } else {
                        Value::list(pair.to_vec())
                    });
                    it.check_len(out.len())?;
                }
            }
        }
        return it.new_iter(out);
    }
    if let (Some(sep), Some(items)) = (this.as_str(), it.items(&other)?) {
        return join_strings(it, items, sep);
    }
    match (it.items(&this)?, other.as_str()) {
        (Some(items), Some(sep)) => join_strings(it, items, sep),
        _ => Err(c.no_match("join(separator) on a list of strings, or separator.join(list)")),
    }
}

fn trim_with<'a>(it: &mut Interp<'a>, c: &Call<'a>, left: bool, right: bool) -> R<Value<'a>> {
    let s = this_str(c)?;
    let chars: Option<Vec<char>> =
        get(it, c, 0)?.and_then(|v| v.as_str().map(|x| x.chars().collect()));
    let pred = |ch: char| match &chars {
        Some(set) => set.contains(&ch),
        None => ch.is_whitespace(),
    };
    let mut out: &str = &s;
    if left {
        out = out.trim_start_matches(pred);
    }
    if right {
        out = out.trim_end_matches(pred);
    }
    Ok(Value::str(out))
}

fn trim<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    trim_with(it, c, true, true)
}

fn trim_left<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    trim_with(it, c, true, false)
}

fn trim_right<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    trim_with(it, c, false, true)
}

/// The call with its `name => value` pairs moved to their parameters' places.
fn named_params<'a>(c: &Call<'a>, params: &[&str]) -> R<Call<'a>> {
    let mut out = Call {
        maps: crate::registry::Pairs::default(),
        ..c.clone()
    };
    for (k, v) in &c.maps {
        let crate::ast::Kind::Word(key) = k.kind() else {
            return Err(c.no_match("unexpected `=>` pair"));
        };
        let Some(i) = params.iter().position(|p| *p == key) else {
            return Err(c.no_match(format!("no parameter `{key}`")));
        };
        if out.slots.len() <= i {
            out.slots.resize(i + 1, Slot::Missing);
        }
        if out.has(i) {
            return Err(c.no_match(format!("`{key}` given twice")));
        }
        out.slots[i] = Slot::Ast(v);
    }
    Ok(out)
}

fn replace_n(s: &str, old: &str, new: &str, count: i64) -> String {
    if count < 0 {
        s.replace(old, new)
    } else {
        s.replacen(old, new, count as usize)
    }
}

fn replace<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    if let Value::DateTime(dt) = c.this()? {
        return super::datetime::replace(it, c, *dt);
    }
    if !c.maps.is_empty() {
        return replace(it, &named_params(c, &["old", "new", "count"])?);
    }
    if !c.has(0) {
        return Err(c.no_match("needs at least 1 arguments"));
    }
    let this = c.this()?.clone();
    match this.view() {
        View::JList(_) | View::List(_) => return super::collections::list_replace(it, c),
        View::Regex(_) => return super::regex::replace_on_regex(it, c),
        View::Str(_) => {}
        _ => return Err(c.no_match(format!("replace on a {}", this.type_name()))),
    }
    let s = this_str(c)?;
    let first = need(it, c, 0)?;
    if let Value::Regex(_) = first {
        return super::regex::replace_on_string(it, c);
    }
    if first.is_dict() {
        let count = int_or(it, c, 1, -1)?;
        let mut out = s.clone();
        for (k, v) in dict_items(&first) {
            out = replace_n(&out, &display_string(&k), &display_string(&v), count);
        }
        it.check_bytes(out.len())?;
        return Ok(Value::str(&out));
    }
    let old = first
        .as_str()
        .ok_or_else(|| c.no_match("replace(old, new)"))?
        .to_string();
    let new = str_arg(it, c, 1)?;
    let count = int_or(it, c, 2, -1)?;
    let out = replace_n(&s, &old, &new, count);
    it.check_bytes(out.len())?;
    Ok(Value::str(&out))
}

fn substring<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let chars: Vec<char> = this_str(c)?.chars().collect();
    let n = chars.len() as i64;
    let mut start = int_or(it, c, 0, 0)?;
    let length = int_or(it, c, 1, -1)?;
    if start < 0 {
        start = (start + n).max(0);
    }
    let start = start.min(n);
    let end = if length < 0 {
        n
    } else {
        start.saturating_add(length).min(n)
    };
    Ok(Value::str(
        &chars[start as usize..end.max(start) as usize]
            .iter()
            .collect::<String>(),
    ))
}

fn affix<'a>(it: &mut Interp<'a>, c: &Call<'a>, prefix: bool) -> R<Value<'a>> {
    let s = this_str(c)?;
    for i in 0..c.slots.len() {
        let p = str_arg(it, c, i)?;
        if (prefix && s.starts_with(&p)) || (!prefix && s.ends_with(&p)) {
            return Ok(Value::Bool(true));
        }
    }
    Ok(Value::Bool(false))
}

fn starts_with<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    affix(it, c, true)
}

fn ends_with<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    affix(it, c, false)
}

fn str_fn<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let v = need(it, c, 0)?;
    if let Some(s) = v.as_str() {
        return Ok(Value::str(s));
    }
    Ok(Value::str(&display_string(&v)))
}

fn concat<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let first = c.this()?.clone();
    let mut rest = Vec::with_capacity(c.slots.len());
    for i in 0..c.slots.len() {
        rest.push(need(it, c, i)?);
    }
    if let Some(s) = first.as_str() {
        let mut out = s.to_string();
        for v in &rest {
            out.push_str(v.as_str().ok_or_else(|| c.no_match("concat of strings"))?);
            it.check_bytes(out.len())?;
        }
        return Ok(Value::Str(Rc::from(out)));
    }
    let mut out = it.seq(&first, "concat")?;
    for v in &rest {
        out.extend(it.seq(v, "concat")?);
        it.check_len(out.len())?;
    }
    it.new_iter(out)
}

fn is_empty<'a>(_: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let v = c.this()?;
    match v.view() {
        View::Null => Ok(Value::Bool(true)),
        View::Str(s) => Ok(Value::Bool(s.trim().is_empty())),
        _ => Err(c.no_match(format!("isEmpty of a {}", v.type_name()))),
    }
}

fn norm<'a>(_: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let v = c.this()?;
    match v.view() {
        View::Null => Ok(Value::Null),
        View::Str(s) if s.trim().is_empty() => Ok(Value::Null),
        View::Str(s) => Ok(Value::str(s.trim())),
        _ => Err(c.no_match(format!("norm of a {}", v.type_name()))),
    }
}

/// Character index range `[start, start + length)` of a string of `n` characters.
fn window(start: i64, length: i64, n: i64) -> (usize, usize) {
    let s = if start < 0 {
        (start + n).max(0)
    } else {
        start.min(n)
    };
    let e = if length < 0 {
        n
    } else {
        s.saturating_add(length).min(n)
    };
    (s as usize, e.max(s) as usize)
}

fn find_chars(hay: &[char], needle: &[char], last: bool) -> Option<usize> {
    if needle.len() > hay.len() {
        return None;
    }
    let matches_at = |i: &usize| hay[*i..*i + needle.len()] == *needle;
    if last {
        (0..=hay.len() - needle.len()).rev().find(matches_at)
    } else {
        (0..=hay.len() - needle.len()).find(matches_at)
    }
}

fn index_of_impl<'a>(it: &mut Interp<'a>, c: &Call<'a>, last: bool) -> R<Value<'a>> {
    let this = c.this()?.clone();
    let item = need(it, c, 0)?;
    if let Some(s) = this.as_str() {
        let needle: Vec<char> = item
            .as_str()
            .ok_or_else(|| c.no_match("indexOf of a string needs a string"))?
            .chars()
            .collect();
        let hay: Vec<char> = s.chars().collect();
        let (a, b) = window(
            int_or(it, c, 1, 0)?,
            int_or(it, c, 2, -1)?,
            hay.len() as i64,
        );
        return Ok(Value::Int(
            find_chars(&hay[a..b], &needle, last).map_or(-1, |i| (i + a) as i64),
        ));
    }
    let items = it.seq(&this, c.name)?;
    let found = if last {
        items.iter().rposition(|v| *v == item)
    } else {
        items.iter().position(|v| *v == item)
    };
    Ok(Value::Int(found.map_or(-1, |i| i as i64)))
}

fn index_of<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    index_of_impl(it, c, false)
}

fn last_index_of<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    index_of_impl(it, c, true)
}

fn to_char_array<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let s = this_str(c)?;
    it.new_list(
        s.chars()
            .map(|ch| Value::str(ch.encode_utf8(&mut [0; 4])))
            .collect(),
    )
}

fn characters<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    const CLASSES: [(&str, &str); 9] = [
        ("digits", "0123456789"),
        ("octdigits", "01234567"),
        ("hexdigits", "0123456789abcdefABCDEF"),
        ("asciiLowercase", "abcdefghijklmnopqrstuvwxyz"),
        ("asciiUppercase", "ABCDEFGHIJKLMNOPQRSTUVWXYZ"),
        (
            "asciiLetters",
            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
        ),
        (
            "letters",
            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
        ),
        ("whitespace", " \t\n\r\u{b}\u{c}"),
        ("punctuation", "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"),
    ];
    let mut out = indexmap::IndexSet::new();
    for (k, v) in &c.maps {
        let crate::ast::Kind::Word(name) = k.kind() else {
            return Err(c.no_match("characters(class => true)"));
        };
        let Some((_, chars)) = CLASSES.iter().find(|(n, _)| *n == name) else {
            return Err(c.no_match(format!("no character class `{name}`")));
        };
        if it.eval(v)?.truthy() {
            out.extend(
                chars
                    .chars()
                    .map(|ch| Value::str(ch.encode_utf8(&mut [0; 4]))),
            );
        }
    }
    Ok(Value::Set(Rc::new(out)))
}

fn hex<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let v = need(it, c, 0)?;
    let i = v.as_int().ok_or_else(|| c.no_match("hex of an integer"))?;
    Ok(Value::str(&if i < 0 {
        format!("-0x{:x}", i.unsigned_abs())
    } else {
        format!("0x{i:x}")
    }))
}

fn is_string<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let v = need(it, c, 0)?;
    Ok(Value::Bool(v.as_str().is_some()))
}

fn format<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    if let Value::DateTime(dt) = c.this()? {
        return super::datetime::format(it, c, *dt);
    }
    let fmt = this_str(c)?;
    let mut args = Vec::new();
    for i in 0..c.slots.len() {
        args.push(need(it, c, i)?);
    }
    let mut out = String::new();
    let mut next = 0;
    let mut chars = fmt.chars().peekable();
    while let Some(ch) = chars.next() {
        match ch {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                out.push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                out.push('}');
            }
            '{' => {
                let mut field = String::new();
                for ch in chars.by_ref() {
                    if ch == '}' {
                        break;
                    }
                    field.push(ch);
                }
                let idx = if field.is_empty() {
                    next += 1;
                    next - 1
                } else {
                    field
                        .parse::<usize>()
                        .map_err(|_| c.no_match("format fields are `{}` or `{n}`"))?
                };
                let v = args
                    .get(idx)
                    .ok_or_else(|| c.no_match("format field out of range"))?;
                out.push_str(&display_string(v));
            }
            ch => out.push(ch),
        }
        it.check_bytes(out.len())?;
    }
    Ok(Value::str(&out))
}
