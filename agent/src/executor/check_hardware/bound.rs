//! A whole-number comparison of the profile (`cpus: ">= 4"`, `memory_mb: 8192`): the numeric operators of
//! the root device hints' `size` (`==`, `!=`, `<`, `<=`, `>`, `>=`; a number alone is `==`), one value
//! each. Ironic's `=` (its old spelling of `>=`) is refused as the hints refuse it, and so are the
//! hints' text operators and `<or>`, which a count or a size has no use for.

use serde_json::Value;
use std::fmt;

/// How the machine's number is compared with the profile's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `==` (or a number alone).
    Eq,
    /// `!=`.
    Ne,
    /// `<`.
    Lt,
    /// `<=`.
    Le,
    /// `>`.
    Gt,
    /// `>=`.
    Ge,
}

/// The operators as written, longest first so that `>=` is not read as `>`.
const OPERATORS: [(&str, Op); 6] = [
    ("==", Op::Eq),
    ("!=", Op::Ne),
    ("<=", Op::Le),
    (">=", Op::Ge),
    ("<", Op::Lt),
    (">", Op::Gt),
];

/// One comparison: an operator and a whole number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bound {
    /// The operator.
    pub op: Op,
    /// The profile's number.
    pub value: u64,
}

impl Bound {
    /// Reads a comparison: a whole number (`4`), or a string of one with an optional operator in front
    /// (`"4"`, `">= 4"`, `">=4"`). The error says what is wrong, without the field (the caller names it).
    pub fn parse(value: &Value) -> Result<Bound, String> {
        match value {
            Value::Number(n) => n
                .as_u64()
                .map(|v| Bound {
                    op: Op::Eq,
                    value: v,
                })
                .ok_or_else(|| format!("{n} is not a whole number of 0 or more")),
            Value::String(text) => Bound::parse_text(text),
            other => Err(format!(
                "expected a whole number or a comparison such as \">= 4\", got {other}"
            )),
        }
    }

    fn parse_text(text: &str) -> Result<Bound, String> {
        let trimmed = text.trim();
        let (op, rest) = OPERATORS
            .iter()
            .find_map(|(written, op)| trimmed.strip_prefix(written).map(|rest| (*op, rest)))
            .unwrap_or((Op::Eq, trimmed));
        if rest.starts_with('=') {
            return Err(format!(
                "{text:?}: `=` is no operator here (write `>=` for at least, `==` for exactly)"
            ));
        }
        let number = rest.trim();
        if number.is_empty() {
            return Err(format!("{text:?}: the operator has no number after it"));
        }
        if !number.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!(
                "{text:?} is not a comparison of whole numbers: write a number with one of \
                 ==, !=, <, <=, >, >= in front (\">= 4\")"
            ));
        }
        number
            .parse::<u64>()
            .map(|value| Bound { op, value })
            .map_err(|_| format!("{text:?}: {number} is too large"))
    }

    /// Whether the machine's number `have` satisfies the comparison.
    pub fn holds(self, have: u64) -> bool {
        self.holds_in(u128::from(have), 1)
    }

    /// Whether `have`, counted in a smaller unit, satisfies the comparison of the profile's number of
    /// `unit`s (bytes against GiB: `>= 100` holds for 100 GiB and more, exactly, without rounding).
    pub fn holds_in(self, have: u128, unit: u64) -> bool {
        let want = u128::from(self.value) * u128::from(unit);
        match self.op {
            Op::Eq => have == want,
            Op::Ne => have != want,
            Op::Lt => have < want,
            Op::Le => have <= want,
            Op::Gt => have > want,
            Op::Ge => have >= want,
        }
    }
}

impl fmt::Display for Bound {
    /// `>= 4`; a plain `4` for equality, as the profile most often writes it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = match self.op {
            Op::Eq => return write!(f, "{}", self.value),
            Op::Ne => "!=",
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
        };
        write!(f, "{op} {}", self.value)
    }
}
