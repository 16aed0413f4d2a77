//! Regular expressions: regex(), matches, search, searchAll, split, replace, replaceBy, `=~`.

use std::rc::Rc;

use indexmap::IndexMap;

use super::{get, int_or, need, str_arg, this_str};
use crate::errors::R;
use crate::registry::{Call, Engine, Form, Interp, Spec};
use crate::value::Value;

pub use crate::pattern::compile;

/// Registers the regex functions.
pub fn register(e: &mut Engine) {
    e.register(
        "regex",
        Form::Function,
        Spec::new(&["pattern", "ignoreCase", "multiLine", "dotAll"], 1),
        regex_fn,
    );
    e.register("matches", Form::Method, Spec::new(&["other"], 1), matches);
    e.register(
        "search",
        Form::Method,
        Spec::new(&["string", "selector"], 1),
        search,
    );
    e.register(
        "searchAll",
        Form::Method,
        Spec::new(&["string", "selector"], 1),
        search_all,
    );
    e.register(
        "replaceBy",
        Form::Method,
        Spec::new(&["other", "selector", "count"], 2),
        replace_by,
    );
    e.register(
        "escapeRegex",
        Form::Function,
        Spec::new(&["string"], 1),
        escape_regex,
    );
    e.register(
        "isRegex",
        Form::Function,
        Spec::new(&["value"], 1),
        is_regex,
    );
}

fn regex_fn<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let pattern = str_arg(it, c, 0)?;
    let mut flags = String::new();
    for (i, f) in [(1, 'i'), (2, 'm'), (3, 's')] {
        if get(it, c, i)?.is_some_and(|v| v.truthy()) {
            flags.push(f);
        }
    }
    Ok(Value::Regex(compile(&pattern, &flags)?))
}

/// The receiver or argument as a regex: a regex value, or a string pattern.
fn as_regex<'a>(v: &Value<'a>, c: &Call<'a>) -> R<Rc<regex::Regex>> {
    match v {
        Value::Regex(r) => Ok(r.clone()),
        _ => match v.as_str() {
            Some(p) => compile(p, ""),
            None => Err(c.no_match(format!("needs a regex, not a {}", v.type_name()))),
        },
    }
}

/// (regex, string) from either `regex.f(string)` or `string.f(regex)`.
fn regex_and_string<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<(Rc<regex::Regex>, String)> {
    let this = c.this()?.clone();
    let other = need(it, c, 0)?;
    match (&this, &other) {
        (Value::Regex(r), _) => Ok((
            r.clone(),
            other
                .as_str()
                .ok_or_else(|| c.no_match("needs a string"))?
                .to_string(),
        )),
        _ => Ok((
            as_regex(&other, c)?,
            this.as_str()
                .ok_or_else(|| c.no_match("needs a string"))?
                .to_string(),
        )),
    }
}

fn matches<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let (re, s) = regex_and_string(it, c)?;
    Ok(Value::Bool(re.is_match(&s)))
}

fn char_index(s: &str, byte: usize) -> i64 {
    s[..byte].chars().count() as i64
}

/// `{value, start, end}` records of a match and its groups.
fn records<'a>(s: &str, caps: &regex::Captures<'_>) -> Vec<Value<'a>> {
    caps.iter()
        .map(|m| {
            let mut d = IndexMap::new();
            match m {
                Some(m) => {
                    d.insert(Value::Text("value"), Value::str(m.as_str()));
                    d.insert(Value::Text("start"), Value::Int(char_index(s, m.start())));
                    d.insert(Value::Text("end"), Value::Int(char_index(s, m.end())));
                }
                None => {
                    d.insert(Value::Text("value"), Value::Null);
                    d.insert(Value::Text("start"), Value::Int(-1));
                    d.insert(Value::Text("end"), Value::Int(-1));
                }
            }
            Value::Dict(Rc::new(d))
        })
        .collect()
}

fn search<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let (re, s) = regex_and_string(it, c)?;
    let Some(caps) = re.captures(&s) else {
        return Ok(Value::Null);
    };
    if c.has(1) {
        let recs = records(&s, &caps);
        return it.apply(c.slot(1), &recs);
    }
    Ok(Value::str(caps.get(0).map_or("", |m| m.as_str())))
}

fn search_all<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let (re, s) = regex_and_string(it, c)?;
    let mut out = Vec::new();
    for caps in re.captures_iter(&s) {
        out.push(if c.has(1) {
            let recs = records(&s, &caps);
            it.apply(c.slot(1), &recs)?
        } else {
            Value::str(caps.get(0).map_or("", |m| m.as_str()))
        });
        it.check_len(out.len())?;
    }
    it.new_iter(out)
}

/// Splits like Python's `re.split`: captured groups are kept between the pieces.
fn split_impl<'a>(it: &mut Interp<'a>, re: &regex::Regex, s: &str, max: i64) -> R<Value<'a>> {
    let mut out = Vec::new();
    let mut last = 0;
    for (n, caps) in re.captures_iter(s).enumerate() {
        if max >= 0 && n as i64 >= max {
            break;
        }
        let Some(m) = caps.get(0) else { continue };
        out.push(Value::str(&s[last..m.start()]));
        for g in caps.iter().skip(1) {
            out.push(g.map_or(Value::Null, |g| Value::str(g.as_str())));
        }
        last = m.end();
        it.check_len(out.len())?;
    }
    out.push(Value::str(&s[last..]));
    it.new_list(out)
}

/// `string.split(regex, maxSplits)`.
pub fn split_string<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let s = this_str(c)?;
    let re = as_regex(&need(it, c, 0)?, c)?;
    let max = int_or(it, c, 1, -1)?;
    split_impl(it, &re, &s, max)
}

/// `regex.split(string, maxSplits)`.
pub fn split_on_regex<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let (re, s) = regex_and_string(it, c)?;
    let max = int_or(it, c, 1, -1)?;
    split_impl(it, &re, &s, max)
}

/// Python replacement syntax (`\1`, `\g<name>`) to the regex crate's (`${1}`, `${name}`).
fn translate_replacement(repl: &str) -> String {
    let mut out = String::new();
    let mut chars = repl.chars().peekable();
    while let Some(ch) = chars.next() {
        match ch {
            '$' => out.push_str("$$"),
            '\\' => match chars.peek().copied() {
                Some(d) if d.is_ascii_digit() => {
                    let mut num = String::new();
                    while let Some(d) = chars.peek().copied().filter(char::is_ascii_digit) {
                        num.push(d);
                        chars.next();
                    }
                    out.push_str(&format!("${{{num}}}"));
                }
                Some('g') => {
                    chars.next();
                    if chars.peek() == Some(&'<') {
                        chars.next();
                        let name: String = chars.by_ref().take_while(|c| *c != '>').collect();
                        out.push_str(&format!("${{{name}}}"));
                    } else {
                        out.push_str("\\g");
                    }
                }
                Some('n') => {
                    chars.next();
                    out.push('\n');
                }
                Some('t') => {
                    chars.next();
                    out.push('\t');
                }
                Some('\\') => {
                    chars.next();
                    out.push('\\');
                }
                _ => out.push('\\'),
            },
            ch => out.push(ch),
        }
    }
    out
}

fn replace_impl<'a>(
    it: &mut Interp<'a>,
    re: &regex::Regex,
    s: &str,
    repl: &str,
    count: i64,
) -> R<Value<'a>> {
    let repl = translate_replacement(repl);
    let out = if count < 0 {
        re.replace_all(s, repl.as_str())
    } else {
        re.replacen(s, count as usize, repl.as_str())
    };
    it.check_bytes(out.len())?;
    Ok(Value::str(&out))
}

/// `regex.replace(string, replacement, count)`.
pub fn replace_on_regex<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let (re, s) = regex_and_string(it, c)?;
    let repl = str_arg(it, c, 1)?;
    let count = int_or(it, c, 2, -1)?;
    replace_impl(it, &re, &s, &repl, count)
}

/// `string.replace(regex, replacement, count)`.
pub fn replace_on_string<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    replace_on_regex(it, c)
}

fn replace_by<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let (re, s) = regex_and_string(it, c)?;
    let count = int_or(it, c, 2, -1)?;
    let mut out = String::new();
    let mut last = 0;
    for (n, caps) in re.captures_iter(&s).enumerate() {
        if count >= 0 && n as i64 >= count {
            break;
        }
        let Some(m) = caps.get(0) else { continue };
        out.push_str(&s[last..m.start()]);
        let recs = records(&s, &caps);
        let r = it.apply(c.slot(1), &recs)?;
        out.push_str(&crate::value::display_string(&r));
        last = m.end();
        it.check_bytes(out.len())?;
    }
    out.push_str(&s[last..]);
    Ok(Value::str(&out))
}

fn escape_regex<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let s = str_arg(it, c, 0)?;
    Ok(Value::str(&regex::escape(&s)))
}

fn is_regex<'a>(it: &mut Interp<'a>, c: &Call<'a>) -> R<Value<'a>> {
    let v = need(it, c, 0)?;
    Ok(Value::Bool(matches!(v, Value::Regex(_))))
}
