//! Typographic quotes in expressions. Fuel's specifications were published as typeset pages, so the
//! expressions users copy from them quote strings with `‘…’` or `“…”`; an opening typographic quote and
//! its closing partner read as `'…'` and `"…"`. Text inside straight quotes is left as it is.

use std::borrow::Cow;

/// `text` with each `‘…’` pair read as `'…'` and each `“…”` pair as `"…"`.
pub fn straighten_quotes(text: &str) -> Cow<'_, str> {
    if !text.contains(['‘', '“']) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' | '`' => {
                // A straight-quoted string: copied as it is, escapes included.
                out.push(c);
                while let Some(d) = chars.next() {
                    out.push(d);
                    if d == '\\' {
                        if let Some(e) = chars.next() {
                            out.push(e);
                        }
                    } else if d == c {
                        break;
                    }
                }
            }
            '‘' | '“' => {
                let (close, straight) = if c == '‘' {
                    ('’', '\'')
                } else {
                    ('”', '"')
                };
                let rest: String = chars.clone().collect();
                match rest.find(close) {
                    Some(end) => {
                        let inner = &rest[..end];
                        out.push(straight);
                        for d in inner.chars() {
                            if d == straight || d == '\\' {
                                out.push('\\');
                            }
                            out.push(d);
                        }
                        out.push(straight);
                        for _ in 0..inner.chars().count() + 1 {
                            chars.next();
                        }
                    }
                    None => out.push(c),
                }
            }
            other => out.push(other),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typographic_pairs_read_as_straight_quotes() {
        assert_eq!(
            straighten_quotes("changed($.nodes.where($.role = ‘compute’))"),
            "changed($.nodes.where($.role = 'compute'))"
        );
        assert_eq!(straighten_quotes("“a'b”"), "\"a'b\"");
        assert_eq!(straighten_quotes("'‘kept’'"), "'‘kept’'");
        assert_eq!(straighten_quotes("‘open"), "‘open");
        assert!(matches!(straighten_quotes("$.x"), Cow::Borrowed(_)));
    }
}
