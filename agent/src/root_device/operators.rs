//! The comparisons a hint makes, on texts (model, serial, ...) and on sizes.

use super::grammar::Op;

/// One GiB: sizes in hints are whole GiB.
pub const GIB: u64 = 1 << 30;

/// A comparison between a device's value and a hint's value(s).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Comparison {
    /// Equal (`s==` on texts, `==` on sizes; the default).
    Eq,
    /// Different (`s!=`, `!=`).
    Ne,
    /// Less than (`s<`, `<`).
    Lt,
    /// Less than or equal (`s<=`, `<=`).
    Le,
    /// Greater than (`s>`, `>`).
    Gt,
    /// Greater than or equal (`s>=`, `>=`).
    Ge,
    /// The value is contained in the device's (`<in>`, texts only).
    In,
    /// Every value is contained in the device's (`<all-in>`, texts only).
    AllIn,
    /// Equal to any of the values (`<or>`).
    Or,
}

impl Comparison {
    /// The comparison a text hint makes with `op`, or `None` when `op` does not compare texts.
    pub fn for_text(op: Op) -> Option<Comparison> {
        Some(match op {
            Op::TextEq => Comparison::Eq,
            Op::TextNe => Comparison::Ne,
            Op::TextLt => Comparison::Lt,
            Op::TextLe => Comparison::Le,
            Op::TextGt => Comparison::Gt,
            Op::TextGe => Comparison::Ge,
            Op::In => Comparison::In,
            Op::AllIn => Comparison::AllIn,
            Op::Or => Comparison::Or,
            Op::Eq | Op::LegacyEq | Op::Ne | Op::Lt | Op::Le | Op::Gt | Op::Ge | Op::RangeIn => {
                return None
            }
        })
    }

    /// The comparison a size hint makes with `op`, or `None` when `op` does not compare numbers (`=`
    /// is refused apart, before this is asked).
    pub fn for_size(op: Op) -> Option<Comparison> {
        Some(match op {
            Op::Eq => Comparison::Eq,
            Op::Ne => Comparison::Ne,
            Op::Lt => Comparison::Lt,
            Op::Le => Comparison::Le,
            Op::Gt => Comparison::Gt,
            Op::Ge => Comparison::Ge,
            Op::Or => Comparison::Or,
            Op::LegacyEq
            | Op::TextEq
            | Op::TextNe
            | Op::TextLt
            | Op::TextLe
            | Op::TextGt
            | Op::TextGe
            | Op::In
            | Op::AllIn
            | Op::RangeIn => return None,
        })
    }

    /// Whether it takes several values (`<or>`, `<all-in>`); the others take one.
    pub fn takes_several(self) -> bool {
        matches!(self, Comparison::Or | Comparison::AllIn)
    }

    /// Whether it holds between the device's text `have` and the hint's `values` (both normalised).
    /// Texts compare by code point, as Python compares them.
    pub fn holds_for_text(self, have: &str, values: &[String]) -> bool {
        let Some(first) = values.first().map(String::as_str) else {
            return false;
        };
        match self {
            Comparison::In => have.contains(first),
            Comparison::AllIn => values.iter().all(|v| have.contains(v.as_str())),
            Comparison::Or => values.iter().any(|v| have == v),
            _ => self.orders(have, first),
        }
    }

    /// Whether it holds between a device of `bytes` and the hint's sizes in GiB. The comparison is
    /// exact: `== 100` holds for a disk of exactly 100 GiB, not for one of 100.3 GiB.
    pub fn holds_for_size(self, bytes: u64, gib: &[u64]) -> bool {
        let have = u128::from(bytes);
        let scaled = |g: u64| u128::from(g) * u128::from(GIB);
        let Some(first) = gib.first().map(|g| scaled(*g)) else {
            return false;
        };
        match self {
            Comparison::Or => gib.iter().any(|g| have == scaled(*g)),
            Comparison::In | Comparison::AllIn => false,
            _ => self.orders(&have, &first),
        }
    }

    /// `have` compared with `want` by `==`, `!=`, `<`, `<=`, `>` or `>=`; false for the others.
    fn orders<T: PartialOrd + ?Sized>(self, have: &T, want: &T) -> bool {
        match self {
            Comparison::Eq => have == want,
            Comparison::Ne => have != want,
            Comparison::Lt => have < want,
            Comparison::Le => have <= want,
            Comparison::Gt => have > want,
            Comparison::Ge => have >= want,
            Comparison::In | Comparison::AllIn | Comparison::Or => false,
        }
    }
}
