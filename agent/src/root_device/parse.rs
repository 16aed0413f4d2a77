//! Reading root device hints from JSON, as Ironic's `parse_root_device_hints` reads them, and refusing
//! what it refuses, plus what Plinth refuses where Ironic would go on to match nothing, everything, or
//! fail while matching (see `docs/PROVISIONING.md`, "Choosing the disk").

use super::grammar::{self, Op};
use super::operators::Comparison;
use serde_json::Value;
use std::fmt;

/// The hint names, in Ironic's spelling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HintName {
    /// `size`: whole GiB.
    Size,
    /// `model`.
    Model,
    /// `vendor`.
    Vendor,
    /// `serial`.
    Serial,
    /// `wwn`.
    Wwn,
    /// `wwn_with_extension`.
    WwnWithExtension,
    /// `wwn_vendor_extension`.
    WwnVendorExtension,
    /// `hctl`: the SCSI address.
    Hctl,
    /// `by_path`: a `/dev/disk/by-path/` name.
    ByPath,
    /// `name`: the device's name, `/dev/sda` or `sda`.
    Name,
    /// `rotational`: a Boolean.
    Rotational,
}

impl HintName {
    /// Every hint, in the order Ironic lists them.
    pub const ALL: [HintName; 11] = [
        HintName::Size,
        HintName::Model,
        HintName::Wwn,
        HintName::Serial,
        HintName::Vendor,
        HintName::WwnWithExtension,
        HintName::WwnVendorExtension,
        HintName::Name,
        HintName::Rotational,
        HintName::Hctl,
        HintName::ByPath,
    ];

    /// The name as written in hints.
    pub fn as_str(self) -> &'static str {
        match self {
            HintName::Size => "size",
            HintName::Model => "model",
            HintName::Vendor => "vendor",
            HintName::Serial => "serial",
            HintName::Wwn => "wwn",
            HintName::WwnWithExtension => "wwn_with_extension",
            HintName::WwnVendorExtension => "wwn_vendor_extension",
            HintName::Hctl => "hctl",
            HintName::ByPath => "by_path",
            HintName::Name => "name",
            HintName::Rotational => "rotational",
        }
    }

    fn from_name(name: &str) -> Option<HintName> {
        HintName::ALL.into_iter().find(|h| h.as_str() == name)
    }
}

impl fmt::Display for HintName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What one hint asks.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Test {
    /// A text attribute compared with normalised values.
    Text(Comparison, Vec<String>),
    /// The size compared with whole GiB.
    Size(Comparison, Vec<u64>),
    /// The rotational flag equal to this.
    Flag(bool),
}

/// One parsed hint.
#[derive(Debug, Clone, PartialEq)]
pub struct Hint {
    /// Its name.
    pub(crate) name: HintName,
    /// The expression as given, in JSON, for messages.
    pub(crate) written: String,
    /// What it asks.
    pub(crate) test: Test,
}

/// A parsed set of root device hints: every hint must hold for a disk to match.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Hints {
    pub(crate) hints: Vec<Hint>,
}

/// Why hints were refused. Every message names the hint and the value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HintError {
    /// The hints are not a JSON object.
    #[error("root device hints must be a JSON object of hint names and values, not {found}")]
    NotAnObject {
        /// What was given.
        found: String,
    },
    /// Names that are no hint.
    #[error(
        "unknown root device hint {}: the hints are {}",
        quoted(names),
        known()
    )]
    Unknown {
        /// The unknown names.
        names: Vec<String>,
    },
    /// A text hint given as something else.
    #[error("root device hint \"{hint}\" must be a string, not {value}")]
    NotAString {
        /// The hint.
        hint: HintName,
        /// The value given.
        value: String,
    },
    /// A size that is not a whole number.
    #[error("root device hint \"{hint}\" is not a whole number of GiB: {value}")]
    NotAnInteger {
        /// The hint.
        hint: HintName,
        /// The value given.
        value: String,
    },
    /// A size of zero or less.
    #[error("root device hint \"{hint}\" must be a positive number of GiB: {value}")]
    NotPositive {
        /// The hint.
        hint: HintName,
        /// The value given.
        value: String,
    },
    /// A Boolean hint that is no Boolean.
    #[error(
        "root device hint \"{hint}\" is not a Boolean (true, false, yes, no, on, off, 1, 0, t, f, y, n): {value}"
    )]
    NotABoolean {
        /// The hint.
        hint: HintName,
        /// The value given.
        value: String,
    },
    /// An empty or blank expression.
    #[error("root device hint \"{hint}\" is empty")]
    Empty {
        /// The hint.
        hint: HintName,
    },
    /// An operator with no value after it.
    #[error("root device hint \"{hint}\" cannot be read: {value} has an operator without a value after it")]
    Unreadable {
        /// The hint.
        hint: HintName,
        /// The value given.
        value: String,
    },
    /// An operator that does not compare this hint's kind of value.
    #[error("root device hint \"{hint}\" cannot use the operator \"{op}\" ({value}): {hint} takes {takes}")]
    Operator {
        /// The hint.
        hint: HintName,
        /// The operator.
        op: &'static str,
        /// The value given.
        value: String,
        /// The operators the hint takes.
        takes: &'static str,
    },
    /// `=`, which Ironic reads as `>=`.
    #[error("root device hint \"{hint}\" uses \"=\" ({value}), which Ironic reads as \">=\": write \">=\" or \"==\"")]
    LegacyEquals {
        /// The hint.
        hint: HintName,
        /// The value given.
        value: String,
    },
    /// A one-value operator written more than once.
    #[error("root device hint \"{hint}\" gives \"{op}\" more than one value ({value}): \"<or>\" takes several")]
    OneValue {
        /// The hint.
        hint: HintName,
        /// The operator.
        op: &'static str,
        /// The value given.
        value: String,
    },
    /// A blank value between two operators.
    #[error("root device hint \"{hint}\" has an empty value between two \"{op}\" ({value})")]
    EmptyValue {
        /// The hint.
        hint: HintName,
        /// The operator.
        op: &'static str,
        /// The value given.
        value: String,
    },
}

impl HintError {
    /// Whether Ironic's parser lets this through: it refuses the same hints, except these, which it
    /// accepts and then matches to nothing, to every disk, to the wrong one, or fails on while
    /// matching. `docs/PROVISIONING.md` lists each case.
    pub fn stricter_than_ironic(&self) -> bool {
        matches!(
            self,
            HintError::Operator { .. }
                | HintError::LegacyEquals { .. }
                | HintError::OneValue { .. }
                | HintError::EmptyValue { .. }
        )
    }
}

fn quoted(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("\"{n}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

fn known() -> String {
    HintName::ALL.map(HintName::as_str).join(", ")
}

/// What text hints take.
const TEXT_OPERATORS: &str = "s==, s!=, s<, s<=, s>, s>=, <in>, <all-in> or <or>";
/// What the size takes.
const SIZE_OPERATORS: &str = "==, !=, <, <=, >, >= or <or>";

impl Hints {
    /// Reads hints from a JSON object such as `{"size": ">= 100", "rotational": false}`. `null` and
    /// `{}` are no hints.
    pub fn parse(value: &Value) -> Result<Hints, HintError> {
        let map = match value {
            Value::Null => return Ok(Hints::default()),
            Value::Object(map) => map,
            other => {
                return Err(HintError::NotAnObject {
                    found: other.to_string(),
                })
            }
        };
        let unknown: Vec<String> = map
            .keys()
            .filter(|k| HintName::from_name(k).is_none())
            .cloned()
            .collect();
        if !unknown.is_empty() {
            return Err(HintError::Unknown { names: unknown });
        }
        let mut hints = Vec::with_capacity(map.len());
        for (key, value) in map {
            let Some(name) = HintName::from_name(key) else {
                continue;
            };
            let test = match name {
                HintName::Size => size(name, value)?,
                HintName::Rotational => flag(name, value)?,
                _ => text(name, value)?,
            };
            hints.push(Hint {
                name,
                written: value.to_string(),
                test,
            });
        }
        Ok(Hints { hints })
    }

    /// Whether there are no hints (the default choice applies).
    pub fn is_empty(&self) -> bool {
        self.hints.is_empty()
    }
}

/// An expression's operator and values, as Ironic reads them; `None` for a value alone.
fn operator_and_values(
    hint: HintName,
    expr: &str,
    shown: &str,
) -> Result<(Option<Op>, Vec<String>), HintError> {
    if expr.is_empty() {
        return Err(HintError::Empty { hint });
    }
    match grammar::head(expr) {
        None => Err(HintError::Unreadable {
            hint,
            value: shown.to_string(),
        }),
        Some(None) => Ok((None, vec![expr.to_string()])),
        Some(Some(op)) => Ok((Some(op), grammar::values(expr, op))),
    }
}

/// Refuses several values for a one-value comparison, and blank values.
fn check_values(
    hint: HintName,
    cmp: Comparison,
    op: Op,
    values: &[String],
    shown: &str,
) -> Result<(), HintError> {
    if !cmp.takes_several() && values.len() > 1 {
        return Err(HintError::OneValue {
            hint,
            op: op.text(),
            value: shown.to_string(),
        });
    }
    if values.iter().any(String::is_empty) || values.is_empty() {
        return Err(HintError::EmptyValue {
            hint,
            op: op.text(),
            value: shown.to_string(),
        });
    }
    Ok(())
}

/// A text hint: model, vendor, serial, the WWNs, hctl, by_path, name.
fn text(hint: HintName, value: &Value) -> Result<Test, HintError> {
    let Value::String(raw) = value else {
        return Err(HintError::NotAString {
            hint,
            value: value.to_string(),
        });
    };
    let shown = value.to_string();
    let (op, mut values) = operator_and_values(hint, &grammar::normalize(raw), &shown)?;
    let cmp = match op {
        None => Comparison::Eq,
        Some(op) => {
            let cmp = Comparison::for_text(op).ok_or(HintError::Operator {
                hint,
                op: op.text(),
                value: shown.clone(),
                takes: TEXT_OPERATORS,
            })?;
            check_values(hint, cmp, op, &values, &shown)?;
            cmp
        }
    };
    // A device's name and by-path name may be written without their directory, except where the
    // value is a part of the name (`<in>`, `<all-in>`).
    let directory = match hint {
        HintName::Name => Some("/dev/"),
        HintName::ByPath => Some("/dev/disk/by-path/"),
        _ => None,
    };
    if let Some(dir) = directory.filter(|_| !matches!(cmp, Comparison::In | Comparison::AllIn)) {
        for v in values.iter_mut().filter(|v| !v.starts_with('/')) {
            v.insert_str(0, dir);
        }
    }
    Ok(Test::Text(cmp, values))
}

/// The size hint: whole GiB, `==` when no operator is given.
fn size(hint: HintName, value: &Value) -> Result<Test, HintError> {
    let shown = value.to_string();
    let raw = match value {
        Value::String(s) => s.clone(),
        Value::Number(n) if n.is_i64() || n.is_u64() => n.to_string(),
        _ => return Err(HintError::NotAnInteger { hint, value: shown }),
    };
    let (op, values) = operator_and_values(hint, &grammar::normalize(&raw), &shown)?;
    // Ironic checks that every value is a positive whole number before it looks at the operator.
    let mut gib = Vec::with_capacity(values.len());
    for v in &values {
        gib.push(positive_integer(hint, v, &shown)?);
    }
    let cmp = match op {
        None => Comparison::Eq,
        Some(Op::LegacyEq) => return Err(HintError::LegacyEquals { hint, value: shown }),
        Some(op) => {
            let cmp = Comparison::for_size(op).ok_or(HintError::Operator {
                hint,
                op: op.text(),
                value: shown.clone(),
                takes: SIZE_OPERATORS,
            })?;
            check_values(hint, cmp, op, &values, &shown)?;
            cmp
        }
    };
    Ok(Test::Size(cmp, gib))
}

/// A whole number above zero, as Python's `int()` reads one (an optional sign and decimal digits).
fn positive_integer(hint: HintName, text: &str, shown: &str) -> Result<u64, HintError> {
    let not_integer = || HintError::NotAnInteger {
        hint,
        value: shown.to_string(),
    };
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(not_integer());
    }
    let negative = text.starts_with('-');
    let zero = digits.bytes().all(|b| b == b'0');
    if negative || zero {
        return Err(HintError::NotPositive {
            hint,
            value: shown.to_string(),
        });
    }
    digits.parse::<u64>().map_err(|_| not_integer())
}

/// The rotational hint: a Boolean, or a string or number Ironic reads as one.
fn flag(hint: HintName, value: &Value) -> Result<Test, HintError> {
    let text = match value {
        Value::Bool(b) => return Ok(Test::Flag(*b)),
        Value::String(s) => grammar::normalize(s),
        Value::Number(n) if n.is_i64() || n.is_u64() => n.to_string(),
        _ => String::new(),
    };
    match text.as_str() {
        "1" | "t" | "true" | "on" | "y" | "yes" => Ok(Test::Flag(true)),
        "0" | "f" | "false" | "off" | "n" | "no" => Ok(Test::Flag(false)),
        _ => Err(HintError::NotABoolean {
            hint,
            value: value.to_string(),
        }),
    }
}
