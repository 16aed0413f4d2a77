//! Runtime values. Input data is borrowed (`Value::Json` points into the caller's
//! [`crate::json::Json`]), so walking a large context copies nothing; values built by the
//! expression are reference-counted so passing them around is cheap.

use std::cmp::Ordering;
use std::hash::{Hash, Hasher};
use std::rc::Rc;

use crate::json::{Json as J, Object as JMap};
use indexmap::{IndexMap, IndexSet};
use serde_json::Value as Out;

use super::ast::Node;

/// A lambda: an expression with the variables visible where it was made.
#[derive(Debug)]
pub struct Lambda<'a> {
    /// The body, evaluated with `$`, `$1`, ... bound to the call's arguments.
    pub body: Node<'a>,
    /// Variables captured where the lambda was made.
    pub scope: Vec<(Name<'a>, Value<'a>)>,
}

/// A lazily produced, possibly infinite sequence.
#[derive(Debug)]
pub enum Gen<'a> {
    /// `start, start + step, ...` forever.
    Count(i64, i64),
    /// The value forever.
    Repeat(Value<'a>),
    /// The items of a list, over and over.
    Cycle(Vec<Value<'a>>),
}

/// The first `n` items of a lazy sequence.
pub fn gen_take<'a>(g: &Gen<'a>, n: usize) -> Vec<Value<'a>> {
    match g {
        Gen::Count(start, step) => (0..n as i64)
            .map_while(|i| i.checked_mul(*step).and_then(|d| d.checked_add(*start)))
            .map(Value::Int)
            .collect(),
        Gen::Repeat(v) => vec![v.clone(); n],
        Gen::Cycle(items) if items.is_empty() => Vec::new(),
        Gen::Cycle(items) => items.iter().cycle().take(n).cloned().collect(),
    }
}

/// A variable name in scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Name<'a> {
    /// `$`, also written `$1`.
    Dollar,
    /// `$1`, `$2`, ...
    Pos(usize),
    /// `$name`.
    Named(&'a str),
    /// A function defined with `def`.
    Func(&'a str),
}

impl<'a> Name<'a> {
    /// The name for `$text` as written after the `$`.
    pub fn from_var(text: &'a str) -> Name<'a> {
        if text.is_empty() {
            return Name::Dollar;
        }
        match text.parse::<usize>() {
            // `$1` is `$`, as in YAQL.
            Ok(1) if text == "1" => Name::Dollar,
            Ok(n) if !text.starts_with('0') || text == "0" => Name::Pos(n),
            _ => Name::Named(text),
        }
    }
}

/// A runtime value.
#[derive(Debug, Clone)]
pub enum Value<'a> {
    /// The undefined value (an `old()` the old state lacks).
    Undef,
    /// `null`
    Null,
    /// A boolean.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
    /// An owned string.
    Str(Rc<str>),
    /// A string borrowed from the expression text or input.
    Text(&'a str),
    /// A string, list or dictionary borrowed from the input data.
    Json(&'a J),
    /// A list built by the expression.
    List(Rc<Vec<Value<'a>>>),
    /// The result of a query (`select`, `where`, ...): a list that `list()`, `set()` and
    /// `dict()` spread rather than nest, as YAQL's iterators.
    Iter(Rc<Vec<Value<'a>>>),
    /// A dictionary built by the expression (keys may be any value).
    Dict(Rc<IndexMap<Value<'a>, Value<'a>>>),
    /// A set.
    Set(Rc<IndexSet<Value<'a>>>),
    /// A compiled regular expression.
    Regex(Rc<regex::Regex>),
    /// A callable lambda.
    Lambda(Rc<Lambda<'a>>),
    /// A lazy sequence.
    Gen(Rc<Gen<'a>>),
    /// A date and time with its UTC offset.
    DateTime(chrono::DateTime<chrono::FixedOffset>),
    /// A signed duration in microseconds (a timespan).
    Span(i64),
}

/// A uniform view of a value, whichever way it is stored.
pub enum View<'v, 'a> {
    /// Undefined.
    Undef,
    /// `null`
    Null,
    /// A boolean.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
    /// A string.
    Str(&'v str),
    /// A list borrowed from the input.
    JList(&'a [J]),
    /// A list built by the expression.
    List(&'v [Value<'a>]),
    /// A dictionary borrowed from the input.
    JDict(&'a JMap),
    /// A dictionary built by the expression.
    Dict(&'v IndexMap<Value<'a>, Value<'a>>),
    /// A set.
    Set(&'v IndexSet<Value<'a>>),
    /// A regular expression.
    Regex(&'v regex::Regex),
    /// A lambda.
    Lambda,
    /// A lazy sequence.
    Gen,
    /// A date and time.
    DateTime(chrono::DateTime<chrono::FixedOffset>),
    /// A timespan in microseconds.
    Span(i64),
}

impl<'a> Value<'a> {
    /// Wraps borrowed input data, copying only scalars.
    #[inline(always)]
    pub fn from_json(j: &'a J) -> Value<'a> {
        match j {
            J::Null => Value::Null,
            J::Bool(b) => Value::Bool(*b),
            J::Number(n) => match n.as_i64() {
                Some(i) => Value::Int(i),
                None => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
            _ => Value::Json(j),
        }
    }

    /// An owned string value.
    pub fn str(s: &str) -> Value<'a> {
        Value::Str(Rc::from(s))
    }

    /// A list value.
    pub fn list(v: Vec<Value<'a>>) -> Value<'a> {
        Value::List(Rc::new(v))
    }

    /// The uniform view.
    #[inline]
    pub fn view(&self) -> View<'_, 'a> {
        match self {
            Value::Undef => View::Undef,
            Value::Null => View::Null,
            Value::Bool(b) => View::Bool(*b),
            Value::Int(i) => View::Int(*i),
            Value::Float(x) => View::Float(*x),
            Value::Str(s) => View::Str(s),
            Value::Text(s) => View::Str(s),
            Value::Json(j) => match j {
                J::String(s) => View::Str(s),
                J::Array(a) => View::JList(a),
                J::Object(m) => View::JDict(m),
                J::Null => View::Null,
                J::Bool(b) => View::Bool(*b),
                J::Number(n) => match n.as_i64() {
                    Some(i) => View::Int(i),
                    None => View::Float(n.as_f64().unwrap_or(f64::NAN)),
                },
            },
            Value::List(l) | Value::Iter(l) => View::List(l),
            Value::Dict(d) => View::Dict(d),
            Value::Set(s) => View::Set(s),
            Value::Regex(r) => View::Regex(r),
            Value::Lambda(_) => View::Lambda,
            Value::Gen(_) => View::Gen,
            Value::DateTime(d) => View::DateTime(*d),
            Value::Span(us) => View::Span(*us),
        }
    }

    /// The string, if this is one.
    #[inline]
    pub fn as_str(&self) -> Option<&str> {
        match self.view() {
            View::Str(s) => Some(s),
            _ => None,
        }
    }

    /// True for lists, sets and lazy sequences (not strings or dictionaries).
    #[inline]
    pub fn is_iterable(&self) -> bool {
        matches!(
            self.view(),
            View::JList(_) | View::List(_) | View::Set(_) | View::Gen
        )
    }

    /// True for dictionaries.
    #[inline]
    pub fn is_dict(&self) -> bool {
        matches!(self.view(), View::JDict(_) | View::Dict(_))
    }

    /// True for `null`.
    #[inline]
    pub fn is_null(&self) -> bool {
        matches!(self.view(), View::Null)
    }

    /// The number of items of a finite collection or characters of a string.
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> Option<usize> {
        match self.view() {
            View::Str(s) => Some(s.chars().count()),
            View::JList(l) => Some(l.len()),
            View::List(l) => Some(l.len()),
            View::JDict(d) => Some(d.len()),
            View::Dict(d) => Some(d.len()),
            View::Set(s) => Some(s.len()),
            _ => None,
        }
    }

    /// Python truthiness: null, false, zero, empty strings and collections are false.
    #[inline]
    pub fn truthy(&self) -> bool {
        match self.view() {
            View::Undef | View::Null => false,
            View::Bool(b) => b,
            View::Int(i) => i != 0,
            View::Float(x) => x != 0.0,
            View::Str(s) => !s.is_empty(),
            View::JList(l) => !l.is_empty(),
            View::List(l) => !l.is_empty(),
            View::JDict(d) => !d.is_empty(),
            View::Dict(d) => !d.is_empty(),
            View::Set(s) => !s.is_empty(),
            View::Regex(_) | View::Lambda | View::Gen | View::DateTime(_) => true,
            View::Span(us) => us != 0,
        }
    }

    /// A number as f64 (booleans are not numbers here).
    pub fn as_f64(&self) -> Option<f64> {
        match self.view() {
            View::Int(i) => Some(i as f64),
            View::Float(x) => Some(x),
            _ => None,
        }
    }

    /// An integer (not a boolean).
    #[inline]
    pub fn as_int(&self) -> Option<i64> {
        match self.view() {
            View::Int(i) => Some(i),
            _ => None,
        }
    }

    /// Looks a key up in a dictionary; `None` when absent or not a dictionary.
    pub fn dict_get(&self, key: &Value<'a>) -> Option<Value<'a>> {
        match self.view() {
            View::JDict(m) => key
                .as_str()
                .and_then(|k| json_get(m, k))
                .map(Value::from_json),
            View::Dict(d) => d.get(key).cloned(),
            _ => None,
        }
    }

    /// Looks a string key up in a dictionary.
    #[inline]
    pub fn dict_get_str(&self, key: &str) -> Option<Value<'a>> {
        match self.view() {
            View::JDict(m) => json_get(m, key).map(Value::from_json),
            View::Dict(d) => d.get(&Value::str(key)).cloned(),
            _ => None,
        }
    }

    /// Short type name for messages.
    pub fn type_name(&self) -> &'static str {
        match self.view() {
            View::Undef => "undefined",
            View::Null => "null",
            View::Bool(_) => "boolean",
            View::Int(_) => "integer",
            View::Float(_) => "float",
            View::Str(_) => "string",
            View::JList(_) | View::List(_) => "list",
            View::JDict(_) | View::Dict(_) => "dictionary",
            View::Set(_) => "set",
            View::Regex(_) => "regex",
            View::Lambda => "lambda",
            View::Gen => "sequence",
            View::DateTime(_) => "datetime",
            View::Span(_) => "timespan",
        }
    }
}

pub use crate::json::str_eq;

/// Looks a key up in a JSON object: a scan for small objects, a binary search of a large one's
/// index.
#[inline]
pub fn json_get<'j>(m: &'j JMap, key: &str) -> Option<&'j J> {
    m.get(key)
}

/// A small, fast, non-cryptographic hasher for the entries of dictionaries and sets (their
/// per-entry hashes are summed so that order does not matter).
#[derive(Default)]
pub struct FxHasher(u64);

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            let mut word = [0u8; 8];
            word.copy_from_slice(w);
            self.write_u64(u64::from_le_bytes(word));
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            // The last bytes as a little-endian word padded with zeros (no copy through memory).
            let word = rest
                .iter()
                .enumerate()
                .fold(0u64, |w, (i, b)| w | u64::from(*b) << (8 * i));
            self.write_u64(word);
        }
    }
    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    #[inline]
    fn write_u8(&mut self, n: u8) {
        self.write_u64(u64::from(n));
    }
    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

/// Values nested deeper than this are not compared, hashed or written out (no stack overflow).
pub const MAX_NESTING: usize = 256;

/// Python-like equality: `1 = 1.0`, `true = 1`, lists and dictionaries by content.
pub fn equal(a: &Value<'_>, b: &Value<'_>) -> bool {
    equal_at(a, b, 0)
}

fn equal_at(a: &Value<'_>, b: &Value<'_>, depth: usize) -> bool {
    if depth > MAX_NESTING {
        return false;
    }
    let equal = |x: &Value<'_>, y: &Value<'_>| equal_at(x, y, depth + 1);
    match (a.view(), b.view()) {
        (View::Undef, View::Undef) | (View::Null, View::Null) => true,
        (View::Str(x), View::Str(y)) => str_eq(x, y),
        (View::Bool(x), View::Bool(y)) => x == y,
        (View::Int(x), View::Int(y)) => x == y,
        (View::Float(x), View::Float(y)) => x == y,
        (View::Int(x), View::Float(y)) | (View::Float(y), View::Int(x)) => (x as f64) == y,
        (View::Bool(x), View::Int(y)) | (View::Int(y), View::Bool(x)) => i64::from(x) == y,
        (View::Bool(x), View::Float(y)) | (View::Float(y), View::Bool(x)) => {
            f64::from(u8::from(x)) == y
        }
        (View::JList(x), View::JList(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b))
        }
        (View::JList(_) | View::List(_), View::JList(_) | View::List(_)) => {
            let (xs, ys) = (seq_items(a), seq_items(b));
            xs.len() == ys.len() && xs.iter().zip(ys.iter()).all(|(x, y)| equal(x, y))
        }
        (View::JDict(x), View::JDict(y)) => x == y,
        (View::JDict(_) | View::Dict(_), View::JDict(_) | View::Dict(_)) => {
            let (xs, ys) = (dict_items(a), dict_items(b));
            xs.len() == ys.len()
                && xs
                    .iter()
                    .all(|(k, v)| ys.iter().any(|(k2, v2)| equal(k, k2) && equal(v, v2)))
        }
        (View::Set(x), View::Set(y)) => x.len() == y.len() && x.iter().all(|v| y.contains(v)),
        (View::Regex(x), View::Regex(y)) => x.as_str() == y.as_str(),
        (View::DateTime(x), View::DateTime(y)) => x == y,
        (View::Span(x), View::Span(y)) => x == y,
        _ => false,
    }
}

/// `a == b` on JSON (maps compare side by side until their orders part, then by lookup).
pub fn json_eq(a: &J, b: &J) -> bool {
    a == b
}

/// The items of a list or set (empty for anything else).
pub fn seq_items<'a>(v: &Value<'a>) -> Vec<Value<'a>> {
    match v.view() {
        View::JList(l) => l.iter().map(Value::from_json).collect(),
        View::List(l) => l.to_vec(),
        View::Set(s) => s.iter().cloned().collect(),
        _ => Vec::new(),
    }
}

/// The entries of a dictionary (empty for anything else).
pub fn dict_items<'a>(v: &Value<'a>) -> Vec<(Value<'a>, Value<'a>)> {
    match v.view() {
        View::JDict(m) => m
            .iter()
            .map(|(k, v)| (Value::Text(k), Value::from_json(v)))
            .collect(),
        View::Dict(d) => d.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        _ => Vec::new(),
    }
}

/// Orders two values as YAQL's comparison operators do: null below everything, numbers with
/// numbers, strings with strings; `None` for anything else (booleans, lists, dictionaries).
pub fn compare(a: &Value<'_>, b: &Value<'_>) -> Option<Ordering> {
    compare_at(a, b, 0)
}

fn compare_at(a: &Value<'_>, b: &Value<'_>, depth: usize) -> Option<Ordering> {
    if depth > MAX_NESTING {
        return None;
    }
    match (a.view(), b.view()) {
        (View::Null, View::Null) => Some(Ordering::Equal),
        (View::Null, _) => Some(Ordering::Less),
        (_, View::Null) => Some(Ordering::Greater),
        (View::Int(x), View::Int(y)) => Some(x.cmp(&y)),
        (View::Int(_) | View::Float(_), View::Int(_) | View::Float(_)) => a
            .as_f64()
            .zip(b.as_f64())
            .and_then(|(x, y)| x.partial_cmp(&y)),
        (View::Str(x), View::Str(y)) => Some(x.cmp(y)),
        (View::DateTime(x), View::DateTime(y)) => Some(x.cmp(&y)),
        (View::Span(x), View::Span(y)) => Some(x.cmp(&y)),
        _ => None,
    }
}

impl PartialEq for Value<'_> {
    fn eq(&self, other: &Self) -> bool {
        equal(self, other)
    }
}

impl Eq for Value<'_> {}

impl Hash for Value<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        hash_at(self, state, 0)
    }
}

fn hash_at<H: Hasher>(value: &Value<'_>, state: &mut H, depth: usize) {
    if depth > MAX_NESTING {
        return;
    }
    {
        let this = value;
        match this.view() {
            View::Undef => 0u8.hash(state),
            View::Null => 1u8.hash(state),
            View::Bool(b) => {
                2u8.hash(state);
                i64::from(b).hash(state)
            }
            View::Int(i) => {
                2u8.hash(state);
                i.hash(state)
            }
            View::Float(x) => {
                2u8.hash(state);
                if x.fract() == 0.0 && x.abs() < 9.0e18 {
                    (x as i64).hash(state)
                } else {
                    x.to_bits().hash(state)
                }
            }
            View::Str(s) => {
                3u8.hash(state);
                s.hash(state)
            }
            View::JList(l) => {
                4u8.hash(state);
                for j in l {
                    hash_at(&Value::from_json(j), state, depth + 1);
                }
            }
            View::List(l) => {
                4u8.hash(state);
                for v in l {
                    hash_at(v, state, depth + 1);
                }
            }
            View::JDict(m) => {
                // Order-independent: the entries' own hashes are summed.
                5u8.hash(state);
                let mut acc = 0u64;
                for (k, v) in m {
                    let mut h = FxHasher::default();
                    3u8.hash(&mut h);
                    k.hash(&mut h);
                    hash_at(&Value::from_json(v), &mut h, depth + 1);
                    acc = acc.wrapping_add(h.finish());
                }
                acc.hash(state);
            }
            View::Dict(d) => {
                5u8.hash(state);
                let mut acc = 0u64;
                for (k, v) in d {
                    let mut h = FxHasher::default();
                    hash_at(k, &mut h, depth + 1);
                    hash_at(v, &mut h, depth + 1);
                    acc = acc.wrapping_add(h.finish());
                }
                acc.hash(state);
            }
            View::Set(s) => {
                8u8.hash(state);
                let mut acc = 0u64;
                for v in s.iter() {
                    let mut h = FxHasher::default();
                    hash_at(v, &mut h, depth + 1);
                    acc = acc.wrapping_add(h.finish());
                }
                acc.hash(state);
            }
            View::Regex(r) => {
                6u8.hash(state);
                r.as_str().hash(state)
            }
            View::Lambda | View::Gen => 7u8.hash(state),
            View::DateTime(d) => {
                9u8.hash(state);
                d.timestamp_micros().hash(state)
            }
            View::Span(us) => {
                10u8.hash(state);
                us.hash(state)
            }
        }
    }
}

/// A dictionary key as JSON object key text.
fn key_text(k: &Value<'_>) -> String {
    match k.view() {
        View::Str(s) => s.to_string(),
        View::Null => "null".into(),
        _ => to_json(k).map(|j| j.to_string()).unwrap_or_default(),
    }
}

/// Converts to JSON: sets become lists, non-string keys their JSON text, regexes their pattern,
/// the undefined value `null`. Lambdas and lazy sequences have no JSON form (`None`).
pub fn to_json(v: &Value<'_>) -> Option<Out> {
    to_json_at(v, 0)
}

fn to_json_at(v: &Value<'_>, depth: usize) -> Option<Out> {
    if depth > MAX_NESTING {
        return None;
    }
    let to_json = |v: &Value<'_>| to_json_at(v, depth + 1);
    Some(match v {
        Value::Undef | Value::Null => Out::Null,
        Value::Bool(b) => Out::Bool(*b),
        Value::Int(i) => Out::from(*i),
        Value::Float(x) => serde_json::Number::from_f64(*x)
            .map(Out::Number)
            .unwrap_or(Out::Null),
        Value::Str(s) => Out::String(s.to_string()),
        Value::Text(s) => Out::String(s.to_string()),
        Value::Json(j) => j.to_value(),
        Value::List(l) | Value::Iter(l) => {
            Out::Array(l.iter().map(to_json).collect::<Option<_>>()?)
        }
        Value::Set(s) => Out::Array(s.iter().map(to_json).collect::<Option<_>>()?),
        Value::Dict(d) => {
            let mut m = serde_json::Map::new();
            for (k, v) in d.iter() {
                m.insert(key_text(k), to_json(v)?);
            }
            Out::Object(m)
        }
        Value::Regex(r) => Out::String(r.as_str().to_string()),
        Value::Lambda(_) | Value::Gen(_) => return None,
        Value::DateTime(d) => Out::String(datetime_text(d)),
        Value::Span(us) => Out::from(*us as f64 / 1e6),
    })
}

/// The JSON form of a datetime: ISO 8601 with the offset, microseconds when there are any.
pub fn datetime_text(dt: &chrono::DateTime<chrono::FixedOffset>) -> String {
    dt.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, false)
}

/// Python's `str()` as YAQL's `str` shows it (`null`, `true`, JSON for collections).
pub fn display_string(v: &Value<'_>) -> String {
    match v.view() {
        View::Undef | View::Null => "null".into(),
        View::Bool(b) => b.to_string(),
        View::Int(i) => i.to_string(),
        View::Float(x) => python_float(x),
        View::Str(s) => s.to_string(),
        View::Regex(r) => r.as_str().to_string(),
        View::Lambda => "<lambda>".into(),
        View::Gen => "<sequence>".into(),
        View::DateTime(d) => datetime_text(&d),
        _ => to_json(v).map(|j| j.to_string()).unwrap_or_default(),
    }
}

/// A float as Python prints it (`2.0`, `0.1`, `1e+20`).
pub fn python_float(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if x != 0.0 && (x.abs() >= 1e16 || x.abs() < 1e-4) {
        let s = format!("{x:e}");
        // Rust writes `1e20`, Python `1e+20`.
        return match s.split_once('e') {
            Some((m, e)) if !e.starts_with('-') => format!("{m}e+{e}"),
            _ => s,
        };
    }
    super::ast::float_text(x)
}

/// Converts JSON into an owned value (for results of registered helper functions).
pub fn from_json_owned<'a>(j: &Out) -> Value<'a> {
    match j {
        Out::Null => Value::Null,
        Out::Bool(b) => Value::Bool(*b),
        Out::Number(n) => match n.as_i64() {
            Some(i) => Value::Int(i),
            None => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Out::String(s) => Value::str(s),
        Out::Array(a) => Value::list(a.iter().map(from_json_owned).collect()),
        Out::Object(m) => Value::Dict(Rc::new(
            m.iter()
                .map(|(k, v)| (Value::str(k), from_json_owned(v)))
                .collect(),
        )),
    }
}

impl Drop for Value<'_> {
    /// Drops nested collections with a heap stack rather than recursion, so that a value nested
    /// a million deep (an `aggregate` can build one) cannot overflow the thread's stack.
    #[inline]
    fn drop(&mut self) {
        if is_container(self) {
            drop_nested(self);
        }
    }
}

#[inline]
fn is_container(v: &Value<'_>) -> bool {
    matches!(
        v,
        Value::List(_) | Value::Iter(_) | Value::Dict(_) | Value::Set(_) | Value::Lambda(_)
    )
}

#[inline(never)]
fn drop_nested(v: &mut Value<'_>) {
    let mut stack: Vec<Value<'_>> = Vec::new();
    detach(v, &mut stack);
    while let Some(mut v) = stack.pop() {
        detach(&mut v, &mut stack);
    }
}

/// Moves the nested collections held by a uniquely owned collection onto `stack` (scalars are
/// left to the ordinary drop).
fn detach<'a>(v: &mut Value<'a>, stack: &mut Vec<Value<'a>>) {
    let mut take = |x: &mut Value<'a>| {
        if is_container(x) {
            stack.push(std::mem::replace(x, Value::Null));
        }
    };
    match v {
        Value::List(l) | Value::Iter(l) => {
            if let Some(items) = Rc::get_mut(l) {
                items.iter_mut().for_each(take);
            }
        }
        Value::Dict(d) => {
            if let Some(map) = Rc::get_mut(d) {
                if map.keys().any(is_container) {
                    for (k, v) in map.drain(..) {
                        stack.push(k);
                        stack.push(v);
                    }
                } else {
                    map.values_mut().for_each(take);
                }
            }
        }
        Value::Set(s) => {
            if let Some(set) = Rc::get_mut(s) {
                if set.iter().any(is_container) {
                    stack.extend(set.drain(..));
                }
            }
        }
        Value::Lambda(l) => {
            if let Some(l) = Rc::get_mut(l) {
                l.scope.iter_mut().for_each(|(_, v)| take(v));
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::str_eq;

    #[test]
    fn str_eq_is_string_equality_at_every_length_and_position() {
        for n in 0..40 {
            let a: String = (0..n).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
            assert!(str_eq(&a, &a.clone()), "{a}");
            for at in 0..n {
                let mut b = a.clone().into_bytes();
                b[at] = b'Z';
                let b = String::from_utf8(b).unwrap();
                assert!(!str_eq(&a, &b), "{a} {b}");
            }
            assert!(!str_eq(&a, &format!("{a}x")));
        }
    }
}
