//! A password that keeps out of logs and error messages.

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use std::fmt;

/// A BMC password. Its `Debug` and `Display` print `***`; it has no `Serialize`, so it leaves the
/// process in clear only through [`Secret::expose`], which the drivers call at the one place they hand
/// it to the BMC (an HTTP `Authorization` header, ipmitool's environment).
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Secret(String);

impl Secret {
    /// Wraps a password.
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    /// The password in clear, for the one call that sends it to the BMC.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether the password is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `text` with every occurrence of the password replaced by `***`: applied to whatever text comes
    /// from outside (a BMC's error message, ipmitool's output) before it goes into an error.
    pub(crate) fn redact(&self, text: &str) -> String {
        if self.0.is_empty() {
            text.to_string()
        } else {
            text.replace(self.0.as_str(), "***")
        }
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Secret {
        Secret(value)
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Secret {
        Secret(value.to_string())
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// Reads a password from a string (an integer, as YAML reads `password: 1234`, is taken as its digits).
/// Its errors never quote the value: serde's usual "invalid type: floating point `1.5`" would.
impl<'de> Deserialize<'de> for Secret {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Secret, D::Error> {
        deserializer.deserialize_any(SecretVisitor)
    }
}

struct SecretVisitor;

impl SecretVisitor {
    fn refuse<E: de::Error>(&self, what: &str) -> Result<Secret, E> {
        Err(E::custom(format!(
            "the password must be a string, not {what} (quote it)"
        )))
    }
}

impl<'de> Visitor<'de> for SecretVisitor {
    type Value = Secret;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a password string")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Secret, E> {
        Ok(Secret::new(v))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Secret, E> {
        Ok(Secret(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Secret, E> {
        Ok(Secret(v.to_string()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Secret, E> {
        Ok(Secret(v.to_string()))
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Secret, E> {
        Ok(Secret(v.to_string()))
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Secret, E> {
        Ok(Secret(v.to_string()))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Secret, E> {
        self.refuse("a number")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Secret, E> {
        self.refuse("a boolean")
    }

    fn visit_bytes<E: de::Error>(self, _: &[u8]) -> Result<Secret, E> {
        self.refuse("bytes")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Secret, E> {
        self.refuse("null")
    }

    fn visit_none<E: de::Error>(self) -> Result<Secret, E> {
        self.refuse("null")
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, _: A) -> Result<Secret, A::Error> {
        self.refuse("a list")
    }

    fn visit_map<A: de::MapAccess<'de>>(self, _: A) -> Result<Secret, A::Error> {
        self.refuse("a map")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_stars() {
        let s = Secret::new("hunter2");
        assert_eq!(format!("{s} {s:?}"), "*** ***");
        assert_eq!(s.expose(), "hunter2");
        assert_eq!(s.redact("bad password hunter2!"), "bad password ***!");
    }

    #[test]
    fn reads_strings_and_integers_and_never_quotes_others() {
        let s: Secret = serde_json::from_str("\"p\"").unwrap();
        assert_eq!(s.expose(), "p");
        let s: Secret = serde_yaml_ng::from_str("1234").unwrap();
        assert_eq!(s.expose(), "1234");
        for text in ["31.4159", "true", "[1]"] {
            let e = serde_yaml_ng::from_str::<Secret>(text)
                .unwrap_err()
                .to_string();
            assert!(e.contains("must be a string"), "{e}");
            assert!(!e.contains("31.4159"), "{e}");
        }
    }
}
