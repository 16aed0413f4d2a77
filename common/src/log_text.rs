//! Text logs that nothing a log line carries can forge: [`EscapeControls`] writes each event with its
//! control characters escaped, so a node's path, task id, name or message (or anyone else's text) can
//! never end the line it is in, start one of its own, or move a terminal's cursor. One writer under the
//! whole log rather than an escape at each call site: a log line added tomorrow is covered too.
//!
//! It writes nothing itself: it rewrites what it is given into the writer it wraps.

use std::io::{self, Write};

/// A writer for one text log event at a time (as `tracing_subscriber`'s formatter writes them): every
/// control character of the event is written as an escape (`\n`, `\r`, `\t`, `\u{1b}`, ...), Unicode's
/// line and paragraph separators too, except the newline that ends the event. With `keep_ansi` (a
/// terminal, where the log's own colours are escape sequences) the escape character itself is kept.
#[derive(Debug)]
pub struct EscapeControls<W> {
    inner: W,
    keep_ansi: bool,
}

impl<W: Write> EscapeControls<W> {
    /// Escapes what is written to `inner`; `keep_ansi` keeps the escape character (colours).
    pub fn new(inner: W, keep_ansi: bool) -> Self {
        EscapeControls { inner, keep_ansi }
    }
}

/// `text` with its control characters escaped (see [`EscapeControls`]), a final newline kept.
pub fn escape_controls(text: &str, keep_ansi: bool) -> String {
    let (body, end) = match text.strip_suffix('\n') {
        Some(body) => (body, "\n"),
        None => (text, ""),
    };
    let mut out = String::with_capacity(text.len() + 8);
    for c in body.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{1b}' if keep_ansi => out.push(c),
            c if c.is_control() || c == '\u{2028}' || c == '\u{2029}' => {
                out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
            }
            c => out.push(c),
        }
    }
    out.push_str(end);
    out
}

impl<W: Write> Write for EscapeControls<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        self.inner
            .write_all(escape_controls(&text, self.keep_ansi).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn through(text: &str, keep_ansi: bool) -> String {
        let mut out = Vec::new();
        EscapeControls::new(&mut out, keep_ansi)
            .write_all(text.as_bytes())
            .unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn a_forged_line_stays_inside_the_line_that_carries_it() {
        let event =
            "2026-11-29T08:00:00Z WARN refused path=a\n2026-11-29T08:00:01Z WARN token revoked\n";
        let written = through(event, false);
        assert_eq!(written.lines().count(), 1, "{written}");
        assert!(written.ends_with("token revoked\n"));
        assert!(written.contains("path=a\\n2026"));
    }

    #[test]
    fn every_control_character_is_escaped_off_a_terminal() {
        let written = through("a\r\u{1b}[2Kb\u{7f}\u{85}\u{2028}\u{0}\tc\n", false);
        assert_eq!(
            written,
            "a\\r\\u{1b}[2Kb\\u{7f}\\u{85}\\u{2028}\\u{0}\\tc\n"
        );
    }

    #[test]
    fn a_terminal_keeps_its_colours_but_not_new_lines() {
        let written = through("\u{1b}[33mWARN\u{1b}[0m x\ny\n", true);
        assert_eq!(written, "\u{1b}[33mWARN\u{1b}[0m x\\ny\n");
    }

    #[test]
    fn text_without_controls_is_written_as_it_is() {
        let plain = "2026-11-29T08:00:00Z  INFO plinth: listening addr=127.0.0.1:8443 é ✓\n";
        assert_eq!(through(plain, false), plain);
    }
}
