//! Deckhand's data paths, read and written as its `jsonpath_parse` and `jsonpath_replace` do.
//!
//! A path is `.` (the whole data) or steps: `.a.b`, `$.a.b`, `.a[0].b`, quoted keys (`.'a.b'`, `["a"]`).
//! Layering paths may also start with `.data`/`$.data` (stripped) or with no dot (`a` is `.a`):
//! [`layering_path`]. Reading a path that is absent, or whose value is null, gives nothing. Writing a path
//! creates the missing mappings on the way (and lists padded with empty mappings for `a[2]`), then puts the
//! value; with a `pattern` the regular expression is replaced inside the string found there, or with
//! `recurse` inside every string below it that contains the pattern's text.

use regex::Regex;
use serde_json::{Map, Value};

/// One step of a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// A mapping's key.
    Key(String),
    /// A list's position.
    Index(usize),
}

/// A parsed path: no steps is the whole data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Path {
    /// The steps from the data's root.
    pub steps: Vec<Step>,
}

/// A layering action's path as Deckhand reads it: a leading `.data` or `$.data` is dropped (even when it
/// is the start of a longer key, as Deckhand does), and a path with no leading `.` or `$.` gets one.
pub fn layering_path(path: &str) -> String {
    let rest = if let Some(rest) = path.strip_prefix(".data") {
        rest
    } else if let Some(rest) = path.strip_prefix("$.data") {
        rest
    } else {
        path
    };
    if rest.starts_with('.') || rest.starts_with("$.") {
        rest.to_string()
    } else {
        format!(".{rest}")
    }
}

impl Path {
    /// Parses `.`, `$`, `.a.b[0]`, `$.a`, `.'quoted.key'`, `["key"]`.
    pub fn parse(text: &str) -> Result<Path, String> {
        let rest = if text == "." || text == "$" {
            ""
        } else if let Some(rest) = text.strip_prefix('$') {
            rest
        } else if text.starts_with('.') {
            text
        } else {
            return Err(format!(
                "the path {text:?} does not begin with \".\" or \"$\""
            ));
        };
        let chars: Vec<char> = rest.chars().collect();
        let mut steps = Vec::new();
        let mut at = 0;
        while at < chars.len() {
            match chars[at] {
                '.' => {
                    at += 1;
                    match chars.get(at) {
                        Some(q @ ('\'' | '"')) => {
                            let (key, next) = quoted(&chars, at + 1, *q, text)?;
                            steps.push(Step::Key(key));
                            at = next;
                        }
                        _ => {
                            let start = at;
                            while at < chars.len() && !matches!(chars[at], '.' | '[') {
                                at += 1;
                            }
                            if at == start {
                                return Err(format!("the path {text:?} has an empty step"));
                            }
                            steps.push(Step::Key(chars[start..at].iter().collect()));
                        }
                    }
                }
                '[' => {
                    at += 1;
                    match chars.get(at) {
                        Some(q @ ('\'' | '"')) => {
                            let (key, next) = quoted(&chars, at + 1, *q, text)?;
                            if chars.get(next) != Some(&']') {
                                return Err(format!("the path {text:?} has an unclosed `[`"));
                            }
                            steps.push(Step::Key(key));
                            at = next + 1;
                        }
                        _ => {
                            let start = at;
                            while at < chars.len() && chars[at] != ']' {
                                at += 1;
                            }
                            if at == chars.len() {
                                return Err(format!("the path {text:?} has an unclosed `[`"));
                            }
                            let inner: String = chars[start..at].iter().collect();
                            let index = inner.trim().parse::<usize>().map_err(|_| {
                                format!(
                                    "the path {text:?} has [{inner}], which is not a list position"
                                )
                            })?;
                            steps.push(Step::Index(index));
                            at += 1;
                        }
                    }
                }
                other => {
                    return Err(format!(
                        "the path {text:?} has {other:?} where a `.` or `[` was expected"
                    ))
                }
            }
        }
        Ok(Path { steps })
    }

    /// The value at the path; absent or null reads as nothing (as Deckhand's `jsonpath_parse`).
    pub fn get<'a>(&self, data: &'a Value) -> Option<&'a Value> {
        self.find(data).filter(|v| !v.is_null())
    }

    /// The value at the path, null included.
    fn find<'a>(&self, data: &'a Value) -> Option<&'a Value> {
        self.steps.iter().try_fold(data, |v, step| match step {
            Step::Key(k) => v.as_object()?.get(k),
            Step::Index(i) => v.as_array()?.get(*i),
        })
    }

    fn find_mut<'a>(&self, data: &'a mut Value) -> Option<&'a mut Value> {
        self.steps.iter().try_fold(data, |v, step| match step {
            Step::Key(k) => v.as_object_mut()?.get_mut(k),
            Step::Index(i) => v.as_array_mut()?.get_mut(*i),
        })
    }

    /// The place at the path, created when absent: missing keys become empty mappings, a position past a
    /// list's end pads the list with empty mappings, a missing key before a position becomes a list.
    pub fn place<'a>(&self, data: &'a mut Value) -> Result<&'a mut Value, String> {
        if self.find(data).is_some() {
            return self
                .find_mut(data)
                .ok_or_else(|| "the path moved".to_string());
        }
        let mut current = data;
        for (n, step) in self.steps.iter().enumerate() {
            let next_is_index = matches!(self.steps.get(n + 1), Some(Step::Index(_)));
            current = match step {
                Step::Key(k) => {
                    let Value::Object(map) = current else {
                        return Err(format!(
                            "cannot create key {k:?}: the data there is {}, not a mapping",
                            kind(current)
                        ));
                    };
                    map.entry(k.clone()).or_insert_with(|| {
                        if next_is_index {
                            Value::Array(Vec::new())
                        } else {
                            Value::Object(Map::new())
                        }
                    })
                }
                Step::Index(i) => {
                    let Value::Array(items) = current else {
                        return Err(format!(
                            "cannot create position [{i}]: the data there is {}, not a list",
                            kind(current)
                        ));
                    };
                    while items.len() <= *i {
                        items.push(Value::Object(Map::new()));
                    }
                    &mut items[*i]
                }
            };
        }
        Ok(current)
    }
}

impl std::fmt::Display for Path {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.steps.is_empty() {
            return f.write_str(".");
        }
        for step in &self.steps {
            match step {
                Step::Key(k) if k.contains(['.', '[', ']']) => write!(f, ".'{k}'")?,
                Step::Key(k) => write!(f, ".{k}")?,
                Step::Index(i) => write!(f, "[{i}]")?,
            }
        }
        Ok(())
    }
}

fn quoted(
    chars: &[char],
    mut at: usize,
    quote: char,
    text: &str,
) -> Result<(String, usize), String> {
    let start = at;
    while at < chars.len() && chars[at] != quote {
        at += 1;
    }
    if at == chars.len() {
        return Err(format!("the path {text:?} has an unclosed quote"));
    }
    Ok((chars[start..at].iter().collect(), at + 1))
}

/// A value's kind in words.
pub fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// How a value is written into a destination: in place, or by pattern.
#[derive(Debug, Clone, Copy)]
pub struct Write<'a> {
    /// The regular expression replaced by the value (Deckhand's `dest.pattern`).
    pub pattern: Option<&'a Regex>,
    /// The pattern's text (a string below the path is changed only if it contains this text).
    pub pattern_text: &'a str,
    /// `dest.recurse`: `Some(depth)` (`-1`: no limit) to replace inside every string below the path.
    pub recurse: Option<i64>,
}

/// Writes `value` at `path` in `data` as Deckhand's `jsonpath_replace` does (the path created when
/// absent). Returns the path's new value.
pub fn write(data: &mut Value, path: &Path, value: Value, how: Write<'_>) -> Result<Value, String> {
    let Some(pattern) = how.pattern else {
        let place = path.place(data)?;
        *place = value;
        return Ok(place.clone());
    };
    let text = python_str(&value);
    let place = path.place(data)?;
    match (how.recurse, &mut *place) {
        (Some(depth), Value::Object(_) | Value::Array(_)) => {
            replace_within(place, pattern, how.pattern_text, &text, 0, depth);
        }
        (_, Value::String(s)) => {
            *s = pattern.replace_all(s, regex::NoExpand(&text)).into_owned();
        }
        (_, other) => {
            return Err(format!(
            "the pattern {:?} cannot be replaced at {path}: the value there is {}, not a string",
            how.pattern_text,
            kind(other)
        ))
        }
    }
    Ok(place.clone())
}

fn replace_within(
    value: &mut Value,
    pattern: &Regex,
    literal: &str,
    text: &str,
    depth: i64,
    max: i64,
) {
    if depth == max {
        return;
    }
    let children: Vec<&mut Value> = match value {
        Value::Object(map) => map.values_mut().collect(),
        Value::Array(items) => items.iter_mut().collect(),
        _ => return,
    };
    for child in children {
        match child {
            Value::String(s) if s.contains(literal) => {
                *s = pattern.replace_all(s, regex::NoExpand(text)).into_owned();
            }
            other => replace_within(other, pattern, literal, text, depth + 1, max),
        }
    }
}

/// A value as Python's `str()` writes it (what Deckhand puts in place of a pattern).
pub fn python_str(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => python_repr(other),
    }
}

fn python_repr(value: &Value) -> String {
    match value {
        Value::Null => "None".to_string(),
        Value::Bool(true) => "True".to_string(),
        Value::Bool(false) => "False".to_string(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if !n.is_i64() && !n.is_u64() => python_float(f),
            _ => n.to_string(),
        },
        Value::String(s) => {
            let quote = if s.contains('\'') && !s.contains('"') {
                '"'
            } else {
                '\''
            };
            let mut out = String::from(quote);
            for c in s.chars() {
                match c {
                    '\\' => out.push_str("\\\\"),
                    '\n' => out.push_str("\\n"),
                    '\t' => out.push_str("\\t"),
                    '\r' => out.push_str("\\r"),
                    c if c == quote => {
                        out.push('\\');
                        out.push(c);
                    }
                    c => out.push(c),
                }
            }
            out.push(quote);
            out
        }
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(python_repr).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(map) => format!(
            "{{{}}}",
            map.iter()
                .map(|(k, v)| format!(
                    "{}: {}",
                    python_repr(&Value::String(k.clone())),
                    python_repr(v)
                ))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// A float as Python's `repr` writes it: the shortest form that reads back, `1.0` for whole numbers,
/// an exponent below 1e-4 and from 1e16.
pub fn python_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".to_string();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity" } else { "-Infinity" }.to_string();
    }
    let magnitude = f.abs();
    if magnitude != 0.0 && !(1e-4..1e16).contains(&magnitude) {
        let written = format!("{f:e}");
        let (mantissa, exponent) = written.split_once('e').unwrap_or((&written, "0"));
        let exponent: i32 = exponent.parse().unwrap_or(0);
        let sign = if exponent < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exponent.abs());
    }
    let written = format!("{f}");
    if written.contains('.') {
        written
    } else {
        format!("{written}.0")
    }
}
