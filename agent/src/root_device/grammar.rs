//! Ironic's expression grammar (oslo.utils' `specs_matcher`), as far as hints need it: which operator
//! an expression starts with, and its values. Ironic reads an expression by parsing its start with that
//! grammar (the rest is not checked) and then splitting the whole text at every occurrence of the
//! operator; this module reads it the same way, so an expression Ironic cannot read is refused here too
//! and one it reads gives the same operator and values.
//!
//! The grammar, tried in this order at the first non-blank character:
//! - `<or>` followed by a value (`<or> a <or> b`);
//! - `<all-in>` followed by a value;
//! - `<range-in>` followed by four values;
//! - one of `==`, `=`, `!=`, `<in>`, `>=`, `<=`, `>`, `<`, `s==`, `s!=`, `s<=`, `s<`, `s>=`, `s>` (the
//!   first that matches, so `<or>` with nothing after it reads as `<` and the value `or>`) followed by
//!   a value;
//! - a value alone (no operator).
//!
//! A value is a run of non-blank characters that does not start with any operator.

/// An operator of the grammar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `==`: numbers equal.
    Eq,
    /// `=`: Ironic's legacy spelling of `>=`.
    LegacyEq,
    /// `!=`: numbers differ.
    Ne,
    /// `<=`.
    Le,
    /// `<`.
    Lt,
    /// `>=`.
    Ge,
    /// `>`.
    Gt,
    /// `s==`: texts equal.
    TextEq,
    /// `s!=`: texts differ.
    TextNe,
    /// `s<=`.
    TextLe,
    /// `s<`.
    TextLt,
    /// `s>=`.
    TextGe,
    /// `s>`.
    TextGt,
    /// `<in>`: the value is contained in the device's.
    In,
    /// `<all-in>`.
    AllIn,
    /// `<or>`: any of the values.
    Or,
    /// `<range-in>`.
    RangeIn,
}

/// The operators that take one value, in the order the grammar tries them.
const UNARY: [(&str, Op); 14] = [
    ("==", Op::Eq),
    ("=", Op::LegacyEq),
    ("!=", Op::Ne),
    ("<in>", Op::In),
    (">=", Op::Ge),
    ("<=", Op::Le),
    (">", Op::Gt),
    ("<", Op::Lt),
    ("s==", Op::TextEq),
    ("s!=", Op::TextNe),
    ("s<=", Op::TextLe),
    ("s<", Op::TextLt),
    ("s>=", Op::TextGe),
    ("s>", Op::TextGt),
];

/// The keywords that take several values.
const NARY: [(&str, Op); 3] = [
    ("<or>", Op::Or),
    ("<all-in>", Op::AllIn),
    ("<range-in>", Op::RangeIn),
];

impl Op {
    /// The operator as written.
    pub fn text(self) -> &'static str {
        UNARY
            .iter()
            .chain(NARY.iter())
            .find(|(_, op)| *op == self)
            .map(|(text, _)| *text)
            .unwrap_or("?")
    }
}

/// What an expression starts with: `Some(Some(op))` for an operator with its value(s), `Some(None)` for
/// a value alone, `None` when the grammar cannot read it (an operator with no value after it).
pub fn head(expr: &str) -> Option<Option<Op>> {
    let start = skip_blanks(expr, 0);
    let rest = &expr[start..];
    for (text, op) in NARY {
        if let Some(after) = rest.strip_prefix(text) {
            let needed = if op == Op::RangeIn { 4 } else { 1 };
            if values_follow(expr, expr.len() - after.len(), needed) {
                return Some(Some(op));
            }
        }
    }
    if let Some((text, op)) = UNARY.iter().find(|(text, _)| rest.starts_with(text)) {
        if values_follow(expr, start + text.len(), 1) {
            return Some(Some(*op));
        }
    }
    values_follow(expr, start, 1).then_some(None)
}

/// The values of an expression that starts with `op`: the text split at every occurrence of the
/// operator, empty pieces dropped, each piece stripped (a blank piece stays, as an empty value).
pub fn values(expr: &str, op: Op) -> Vec<String> {
    expr.split(op.text())
        .filter(|piece| !piece.is_empty())
        .map(|piece| py_strip(piece).to_string())
        .collect()
}

/// Whether `count` values follow position `at`.
fn values_follow(expr: &str, mut at: usize, count: usize) -> bool {
    for _ in 0..count {
        match value_at(expr, at) {
            Some(end) => at = end,
            None => return false,
        }
    }
    true
}

/// Where the value starting at `at` (after blanks) ends, if one starts there.
fn value_at(expr: &str, at: usize) -> Option<usize> {
    let start = skip_blanks(expr, at);
    let rest = &expr[start..];
    let keyword = UNARY
        .iter()
        .chain(NARY.iter())
        .any(|(text, _)| rest.starts_with(text));
    if keyword {
        return None;
    }
    let len: usize = rest
        .chars()
        .take_while(|c| !is_py_space(*c))
        .map(char::len_utf8)
        .sum();
    (len > 0).then_some(start + len)
}

/// Skips the blanks the grammar skips between tokens (space, tab, newline, carriage return).
fn skip_blanks(expr: &str, at: usize) -> usize {
    let rest = &expr[at..];
    at + rest.len() - rest.trim_start_matches([' ', '\t', '\n', '\r']).len()
}

/// Whether Python counts `c` as white space (`str.isspace`, `\s`): Unicode's white space and the
/// four information separators U+001C to U+001F.
pub fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// `text.strip()` in Python.
pub fn py_strip(text: &str) -> &str {
    text.trim_matches(is_py_space)
}

/// `text.strip().lower()` in Python: how Ironic normalises both a hint and a device's value.
pub fn normalize(text: &str) -> String {
    py_strip(text).to_lowercase()
}
