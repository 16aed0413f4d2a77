//! Deckhand's data paths, read and written as its `jsonpath_parse` and `jsonpath_replace` do.
//!
//! A path is `.` (the whole data) or steps: `.a.b`, `$.a.b`, `.a[0].b`, quoted keys (`.'a.b'`, `["a"]`).
//! Layering paths may also start with `.data`/`$.data` (stripped) or with no dot (`a` is `.a`):
//! [`layering_path`]. Reading a path that is absent, or whose value is null, gives nothing. Writing a path
//! creates the missing mappings on the way (and lists padded with empty mappings for `a[2]`), then puts the
//! value; with a `pattern` the regular expression is replaced inside the string found there, or with
//! `recurse` inside every string below it that contains the pattern's text.

use regex::Regex;
use std::borrow::Cow;
use std::sync::Arc;

use smallvec::SmallVec;

use crate::tree::Tree;

/// One step of a path, borrowing the path's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step<'a> {
    /// A mapping's key.
    Key(&'a str),
    /// A list's position.
    Index(usize),
}

/// A parsed path, borrowing its text: no steps is the whole data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Path<'a> {
    /// The steps from the data's root (held in place up to six).
    pub steps: SmallVec<[Step<'a>; 6]>,
}

/// A layering action's path as Deckhand reads it: a leading `.data` or `$.data` is dropped (even when it
/// is the start of a longer key, as Deckhand does), and a path with no leading `.` or `$.` gets one.
pub fn layering_path(path: &str) -> Cow<'_, str> {
    let rest = if let Some(rest) = path.strip_prefix(".data") {
        rest
    } else if let Some(rest) = path.strip_prefix("$.data") {
        rest
    } else {
        path
    };
    if rest.starts_with('.') || rest.starts_with("$.") {
        Cow::Borrowed(rest)
    } else {
        Cow::Owned(format!(".{rest}"))
    }
}

impl<'a> Path<'a> {
    /// Parses `.`, `$`, `.a.b[0]`, `$.a`, `.'quoted.key'`, `["key"]`.
    pub fn parse(text: &'a str) -> Result<Path<'a>, String> {
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
        // Every delimiter is ASCII, so the text is cut only at character boundaries.
        let bytes = rest.as_bytes();
        let mut steps = SmallVec::new();
        let mut at = 0;
        while at < bytes.len() {
            match bytes[at] {
                b'.' => {
                    at += 1;
                    match bytes.get(at) {
                        Some(&q @ (b'\'' | b'"')) => {
                            let (key, next) = quoted(rest, at + 1, q, text)?;
                            steps.push(Step::Key(key));
                            at = next;
                        }
                        _ => {
                            let start = at;
                            at = next_delimiter(bytes, at);
                            if at == start {
                                return Err(format!("the path {text:?} has an empty step"));
                            }
                            steps.push(Step::Key(&rest[start..at]));
                        }
                    }
                }
                b'[' => {
                    at += 1;
                    match bytes.get(at) {
                        Some(&q @ (b'\'' | b'"')) => {
                            let (key, next) = quoted(rest, at + 1, q, text)?;
                            if bytes.get(next) != Some(&b']') {
                                return Err(format!("the path {text:?} has an unclosed `[`"));
                            }
                            steps.push(Step::Key(key));
                            at = next + 1;
                        }
                        _ => {
                            let start = at;
                            while at < bytes.len() && bytes[at] != b']' {
                                at += 1;
                            }
                            if at == bytes.len() {
                                return Err(format!("the path {text:?} has an unclosed `[`"));
                            }
                            let inner = &rest[start..at];
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
                _ => {
                    let other = rest[at..].chars().next().unwrap_or('?');
                    return Err(format!(
                        "the path {text:?} has {other:?} where a `.` or `[` was expected"
                    ));
                }
            }
        }
        Ok(Path { steps })
    }

    /// The value at the path; absent or null reads as nothing (as Deckhand's `jsonpath_parse`).
    pub fn get<'t>(&self, data: &'t Tree) -> Option<&'t Tree> {
        self.find(data).filter(|v| !v.is_null())
    }

    /// The value at the path, null included.
    pub(crate) fn find<'t>(&self, data: &'t Tree) -> Option<&'t Tree> {
        self.steps.iter().try_fold(data, |v, step| match step {
            Step::Key(k) => v.as_object()?.get(k),
            Step::Index(i) => v.as_array()?.get(*i),
        })
    }

    /// The place at the path, created when absent: missing keys become empty mappings, a position past a
    /// list's end pads the list with empty mappings, a missing key before a position becomes a list.
    /// The mappings and lists on the way are copied if they are shared ([`Tree`]).
    pub fn place<'t>(&self, data: &'t mut Tree) -> Result<&'t mut Tree, String> {
        self.place_after(data, &mut Walked::default())
    }

    /// [`Path::place`], taking the steps this path shares with the last one placed in the same data
    /// (`walked`) by their positions, without looking them up again; `walked` becomes this path's.
    pub fn place_after<'t>(
        &self,
        data: &'t mut Tree,
        walked: &mut Walked<'a>,
    ) -> Result<&'t mut Tree, String> {
        // The last path's own place is not shared: a value was written there.
        let before_last = walked.steps.len().saturating_sub(1);
        let shared = self
            .steps
            .iter()
            .zip(&walked.steps[..before_last])
            .take_while(|(step, (taken, _))| *step == taken)
            .count();
        walked.steps.truncate(shared);
        let mut current = data;
        for &(step, at) in &walked.steps {
            let next = match current {
                Tree::Object(map) => Arc::make_mut(map).get_index_mut(at).map(|(_, v)| v),
                Tree::Array(items) => Arc::make_mut(items).get_mut(at),
                _ => None,
            };
            // Positions stay where they were while the data is written only through `place_after`.
            current = next.ok_or_else(|| format!("{step:?} moved since it was last written"))?;
        }
        for (n, step) in self.steps.iter().enumerate().skip(shared) {
            let next_is_index = matches!(self.steps.get(n + 1), Some(Step::Index(_)));
            let (at, next) = match (step, current) {
                (Step::Key(k), Tree::Object(map)) => {
                    Arc::make_mut(map).get_or_insert_full(k, || {
                        if next_is_index {
                            Tree::array(Vec::new())
                        } else {
                            Tree::empty_object()
                        }
                    })
                }
                (Step::Index(i), Tree::Array(items)) => {
                    let items = Arc::make_mut(items);
                    while items.len() <= *i {
                        items.push(Tree::empty_object());
                    }
                    (*i, &mut items[*i])
                }
                (Step::Key(k), other) => {
                    return Err(format!(
                        "cannot create key {k:?}: the data there is {}, not a mapping",
                        other.kind()
                    ))
                }
                (Step::Index(i), other) => {
                    return Err(format!(
                        "cannot create position [{i}]: the data there is {}, not a list",
                        other.kind()
                    ))
                }
            };
            walked.steps.push((*step, at));
            current = next;
        }
        Ok(current)
    }
}

/// The steps the last path placed in some data took, each with its position in its mapping or list
/// ([`Path::place_after`]). Valid while that data is written only through `place_after` with it: keys
/// and positions are added at the end, so those taken stay where they are.
#[derive(Debug, Default)]
pub struct Walked<'a> {
    steps: SmallVec<[(Step<'a>, usize); 8]>,
}

impl std::fmt::Display for Path<'_> {
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

/// The position of the first `.` or `[` at or after `at` (the text's length when there is none), read
/// eight bytes at a time: in a word where each byte is XORed with the delimiter, a byte that was the
/// delimiter is zero, and `(x - 0x01..) & !x & 0x80..` marks the first zero byte exactly (a borrow only
/// marks bytes after it).
fn next_delimiter(bytes: &[u8], mut at: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let zero_byte = |x: u64| x.wrapping_sub(ONES) & !x & HIGHS;
    while let Some(chunk) = bytes.get(at..at + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let word = u64::from_le_bytes(word);
        let found =
            zero_byte(word ^ (ONES * u64::from(b'.'))) | zero_byte(word ^ (ONES * u64::from(b'[')));
        if found != 0 {
            return at + (found.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    while at < bytes.len() && !matches!(bytes[at], b'.' | b'[') {
        at += 1;
    }
    at
}

/// The quoted key starting at `at` in `rest` (after the opening quote), and the position after its
/// closing quote.
fn quoted<'r>(rest: &'r str, at: usize, quote: u8, text: &str) -> Result<(&'r str, usize), String> {
    match rest.as_bytes()[at.min(rest.len())..]
        .iter()
        .position(|b| *b == quote)
    {
        Some(len) => Ok((&rest[at..at + len], at + len + 1)),
        None => Err(format!("the path {text:?} has an unclosed quote")),
    }
}

/// A `pattern`, as Deckhand searches it with Python's `re`. A pattern holding none of the characters
/// special to a regular expression is its own text, and is replaced as text.
#[derive(Debug, Clone)]
pub enum Pattern<'a> {
    /// A pattern that is plain text.
    Text(&'a str),
    /// A regular expression (shared, with the search caches it keeps: a cloned `Regex` would start
    /// with none).
    Regex(Arc<Regex>),
}

impl<'a> Pattern<'a> {
    /// A pattern that is its own text, when it is one.
    pub fn text(pattern: &'a str) -> Option<Pattern<'a>> {
        let special = |c: char| "\\.+*?()|[]{}^$".contains(c);
        (!pattern.is_empty() && !pattern.contains(special)).then_some(Pattern::Text(pattern))
    }

    /// `s` with every match replaced by `with` (taken as it is: no group references).
    pub fn replace_all<'s>(&self, s: &'s str, with: &str) -> Cow<'s, str> {
        match self {
            Pattern::Text(text) if s.contains(text) => Cow::Owned(s.replace(text, with)),
            Pattern::Text(_) => Cow::Borrowed(s),
            Pattern::Regex(re) => re.replace_all(s, regex::NoExpand(with)),
        }
    }
}

/// How a value is written into a destination: in place, or by pattern.
#[derive(Debug, Clone, Copy)]
pub struct Write<'a> {
    /// The pattern replaced by the value (Deckhand's `dest.pattern`).
    pub pattern: Option<&'a Pattern<'a>>,
    /// The pattern's text (a string below the path is changed only if it contains this text).
    pub pattern_text: &'a str,
    /// `dest.recurse`: `Some(depth)` (`-1`: no limit) to replace inside every string below the path.
    pub recurse: Option<i64>,
}

/// Writes `value` at `path` in `data` as Deckhand's `jsonpath_replace` does (the path created when
/// absent).
pub fn write<'a>(
    data: &mut Tree,
    path: &Path<'a>,
    value: Tree,
    how: Write<'_>,
    walked: &mut Walked<'a>,
) -> Result<(), String> {
    let Some(pattern) = how.pattern else {
        *path.place_after(data, walked)? = value;
        return Ok(());
    };
    let text = python_str(&value);
    let place = path.place_after(data, walked)?;
    match (how.recurse, &mut *place) {
        (Some(depth), Tree::Object(_) | Tree::Array(_)) => {
            replace_within(place, pattern, how.pattern_text, &text, 0, depth);
        }
        (_, Tree::String(s)) => {
            let replaced = pattern.replace_all(s, &text);
            if let Cow::Owned(new) = replaced {
                *s = Arc::from(new);
            }
        }
        (_, other) => {
            return Err(format!(
            "the pattern {:?} cannot be replaced at {path}: the value there is {}, not a string",
            how.pattern_text,
            other.kind()
        ))
        }
    }
    Ok(())
}

/// Replaces `pattern` inside every string below `value` that contains `literal`, down to `max` levels
/// (`-1`: all); only the mappings and lists holding such a string are copied.
fn replace_within(
    value: &mut Tree,
    pattern: &Pattern<'_>,
    literal: &str,
    text: &str,
    depth: i64,
    max: i64,
) {
    if depth == max || !contains_text(value, literal, depth, max) {
        return;
    }
    let children: Vec<&mut Tree> = match value {
        Tree::Object(map) => Arc::make_mut(map).values_mut().collect(),
        Tree::Array(items) => Arc::make_mut(items).iter_mut().collect(),
        _ => return,
    };
    for child in children {
        match child {
            Tree::String(s) if s.contains(literal) => {
                let replaced = pattern.replace_all(s, text).into_owned();
                *s = Arc::from(replaced);
            }
            other => replace_within(other, pattern, literal, text, depth + 1, max),
        }
    }
}

/// Whether a string holding `literal` lies below `value` within the levels [`replace_within`] visits.
fn contains_text(value: &Tree, literal: &str, depth: i64, max: i64) -> bool {
    if depth == max {
        return false;
    }
    let below = |child: &Tree| match child {
        Tree::String(s) => s.contains(literal),
        other => contains_text(other, literal, depth + 1, max),
    };
    match value {
        Tree::Object(map) => map.values().any(below),
        Tree::Array(items) => items.iter().any(below),
        _ => false,
    }
}

/// A value as Python's `str()` writes it (what Deckhand puts in place of a pattern).
pub fn python_str(value: &Tree) -> String {
    match value {
        Tree::String(s) => s.to_string(),
        other => python_repr(other),
    }
}

fn python_repr(value: &Tree) -> String {
    match value {
        Tree::Null => "None".to_string(),
        Tree::Bool(true) => "True".to_string(),
        Tree::Bool(false) => "False".to_string(),
        Tree::Number(n) => match n.as_f64() {
            Some(f) if !n.is_i64() && !n.is_u64() => python_float(f),
            _ => n.to_string(),
        },
        Tree::String(s) => python_quoted(s),
        Tree::Array(items) => format!(
            "[{}]",
            items.iter().map(python_repr).collect::<Vec<_>>().join(", ")
        ),
        Tree::Object(map) => format!(
            "{{{}}}",
            map.iter()
                .map(|(k, v)| format!("{}: {}", python_quoted(k), python_repr(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// A string as Python's `repr` writes it.
fn python_quoted(s: &str) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(path: &str) -> Result<Vec<String>, String> {
        Path::parse(path).map(|p| {
            p.steps
                .iter()
                .map(|s| match s {
                    Step::Key(k) => k.to_string(),
                    Step::Index(i) => format!("[{i}]"),
                })
                .collect()
        })
    }

    #[test]
    fn delimiters_are_found_at_every_place_in_a_word() {
        for len in 0..40 {
            for at in 0..=len {
                for delimiter in [b'.', b'['] {
                    // Bytes next to the delimiters' values, and one that is not ASCII.
                    let mut text: Vec<u8> = (0..len)
                        .map(|n| [b'-', b'/', b'Z', b'\\', 0xc3][n % 5])
                        .collect();
                    if at < len {
                        text[at] = delimiter;
                    }
                    for from in 0..=at {
                        assert_eq!(next_delimiter(&text, from), at, "{len} {at} {from}");
                    }
                }
            }
        }
    }

    #[test]
    fn paths_placed_one_after_another_go_where_each_alone_goes() {
        let paths = [
            ".a.b.c",
            ".a.b.d",
            ".a.x",
            ".a.b.c.e",
            ".a.b",
            ".a.b.f",
            ".l[2].k",
            ".l[2].m",
            ".l[0]",
            ".l[2].k.z",
            ".a.b.f",
            ".q",
            ".a.'b'.g",
        ];
        let start = Tree::from(serde_json::json!({"a": {"x": 1, "b": {"c": {}}}, "l": []}));
        let (mut alone, mut after) = (start.clone(), start.clone());
        let mut walked = Walked::default();
        for (n, text) in paths.iter().enumerate() {
            let path = Path::parse(text).unwrap();
            let value = Tree::from(serde_json::json!({"n": n}));
            *path.place(&mut alone).unwrap() = value.clone();
            *path.place_after(&mut after, &mut walked).unwrap() = value;
            assert_eq!(after, alone, "after {text}");
        }
        assert_eq!(
            after.to_value()["a"]["b"]["f"],
            serde_json::json!({"n": 10})
        );
    }

    #[test]
    fn plain_and_bracketed_paths_read_alike() {
        assert_eq!(keys("."), Ok(vec![]));
        assert_eq!(keys("$"), Ok(vec![]));
        assert_eq!(keys(".a.b"), Ok(vec!["a".into(), "b".into()]));
        assert_eq!(keys("$.a.b"), keys(".a.b"));
        assert_eq!(keys(".a]b"), Ok(vec!["a]b".into()]));
        assert_eq!(
            keys(".a[0].b"),
            Ok(vec!["a".into(), "[0]".into(), "b".into()])
        );
        assert_eq!(keys(".'a.b'.c"), Ok(vec!["a.b".into(), "c".into()]));
        assert_eq!(
            keys("[\"a\"].b"),
            Err("the path \"[\\\"a\\\"].b\" does not begin with \".\" or \"$\"".into())
        );
        assert_eq!(keys("$[\"a\"].b"), Ok(vec!["a".into(), "b".into()]));
        for empty in ["..", ".a.", ".a..b", "$."] {
            assert!(keys(empty).unwrap_err().contains("empty step"), "{empty}");
        }
        assert!(keys("$a")
            .unwrap_err()
            .contains("where a `.` or `[` was expected"));
        assert!(keys("a.b").unwrap_err().contains("does not begin"));
    }
}
