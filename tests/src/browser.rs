//! A real browser for the console's tests: Debian's `chromium`, headless, driven over WebDriver by
//! `chromedriver` (through fantoccini), with a fresh profile each time. The methods block, so tests
//! read like the rest of the harness.
//!
//! [`Browser::measure_layout`] checks a page by measurement (`measure.js`, run in the page): cells whose
//! content is wider or taller than their box, rows that overlap, header cells not above their columns,
//! graph boxes whose text spills out; each offence names its element by a selector and gives its sizes.

use crate::{bin_dir, wait_until};
use anyhow::{bail, Context, Result};
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{json, Value};
use std::fmt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The flags the browser runs with (headless, no sandbox in containers, nothing fetched in the
/// background).
pub const CHROMIUM_FLAGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1400,1000",
];

/// The script [`Browser::measure_layout`] runs in the page.
const MEASURE_JS: &str = include_str!("measure.js");

/// What [`Browser::measure_layout`] measures: CSS selectors (empty for none).
#[derive(Debug, Clone, Copy, Default)]
pub struct LayoutCheck<'a> {
    /// Cells: each one's content must fit its box, or be one line cut with an ellipsis whose title
    /// holds all of its text.
    pub cells: &'a str,
    /// Rows: no two may overlap, and each one's content must fit it.
    pub rows: &'a str,
    /// Header rows and the body rows under them: each body cell must start and end where its header
    /// cell does.
    pub aligned: &'a [(&'a str, &'a str)],
    /// SVG boxes (a `g` with a `rect` and `text`s): each text inside its rect, no two boxes overlapping.
    pub boxes: &'a str,
}

/// One thing found wrong by [`Browser::measure_layout`].
#[derive(Debug, Clone)]
pub struct Offence {
    /// Which element(s), as a selector path from the nearest ancestor with an id.
    pub selector: String,
    /// What is wrong (`clipped`, `rows overlap`, ...).
    pub problem: String,
    /// The measured sizes (scroll and client width and height, or the boxes compared).
    pub sizes: Value,
    /// The element's text.
    pub text: String,
    /// Its title, if any.
    pub title: String,
}

impl fmt::Display for Offence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} {} text {:?}",
            self.selector, self.problem, self.sizes, self.text
        )?;
        if !self.title.is_empty() {
            write!(f, " title {:?}", self.title)?;
        }
        Ok(())
    }
}

/// A cell cut with an ellipsis on purpose, its whole text in its title.
#[derive(Debug, Clone)]
pub struct Ellipsised {
    /// Which element.
    pub selector: String,
    /// Its (cut) text.
    pub text: String,
    /// Its title: the whole text.
    pub title: String,
}

/// What [`Browser::measure_layout`] found.
#[derive(Debug, Clone)]
pub struct Layout {
    /// Everything clipped, overlapping or misaligned.
    pub offences: Vec<Offence>,
    /// Cells cut with an ellipsis and a title (allowed; the caller decides which may be).
    pub ellipsised: Vec<Ellipsised>,
    /// How many elements were measured.
    pub measured: usize,
}

impl Layout {
    /// The offences, one a line.
    pub fn report(&self) -> String {
        self.offences.iter().map(|o| format!("  {o}\n")).collect()
    }
}

/// A headless browser session.
pub struct Browser {
    rt: tokio::runtime::Runtime,
    client: Option<Client>,
    driver: Child,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Starts chromedriver on a free port and a browser session with a fresh profile.
    pub fn start() -> Result<Browser> {
        let (chromium, chromedriver) = crate::needs::chromium();
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let driver = Command::new(chromedriver)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("chromedriver starts")?;
        wait_until("chromedriver", Duration::from_secs(30), || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        let profile = tempfile::tempdir()?;
        let mut args: Vec<String> = CHROMIUM_FLAGS.iter().map(|s| s.to_string()).collect();
        args.push(format!("--user-data-dir={}", profile.path().display()));
        let caps = json!({
            "browserName": "chrome",
            // The controller's certificate is self-signed.
            "acceptInsecureCerts": true,
            "goog:chromeOptions": {"binary": chromium, "args": args},
        });
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let client = rt.block_on(async {
            let mut builder =
                ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new());
            if let Value::Object(map) = caps {
                builder.capabilities(map.into_iter().collect());
            }
            builder.connect(&format!("http://127.0.0.1:{port}")).await
        });
        let client = client.context("a WebDriver session")?;
        Ok(Browser {
            rt,
            client: Some(client),
            driver,
            _profile: profile,
        })
    }

    fn c(&self) -> &Client {
        self.client
            .as_ref()
            .expect("the session is open until drop")
    }

    /// Opens a URL.
    pub fn goto(&self, url: &str) -> Result<()> {
        Ok(self.rt.block_on(self.c().goto(url))?)
    }

    /// Runs a script (`return ...;` answers a value).
    pub fn eval(&self, script: &str) -> Result<Value> {
        Ok(self.rt.block_on(self.c().execute(script, vec![]))?)
    }

    /// Sets the window's size (WebDriver `/window/rect`); answers the page's inner width and height.
    pub fn set_window_size(&self, width: u32, height: u32) -> Result<(u64, u64)> {
        self.rt.block_on(self.c().set_window_size(width, height))?;
        let inner = self.eval("return [window.innerWidth, window.innerHeight]")?;
        let get = |i: usize| inner[i].as_u64().unwrap_or(0);
        Ok((get(0), get(1)))
    }

    /// Measures the page's layout as `check` says (see [`LayoutCheck`]) and answers what is wrong.
    pub fn measure_layout(&self, check: &LayoutCheck<'_>) -> Result<Layout> {
        let spec = json!({
            "cells": check.cells,
            "rows": check.rows,
            "aligned": check.aligned,
            "boxes": check.boxes,
        });
        let answer = self.rt.block_on(self.c().execute(MEASURE_JS, vec![spec]))?;
        let text = |v: &Value, k: &str| v[k].as_str().unwrap_or_default().to_string();
        let offences = answer["offences"]
            .as_array()
            .context("the measurement's answer")?
            .iter()
            .map(|o| Offence {
                selector: text(o, "selector"),
                problem: text(o, "problem"),
                sizes: o["sizes"].clone(),
                text: text(o, "text"),
                title: text(o, "title"),
            })
            .collect();
        let ellipsised = answer["ellipsised"]
            .as_array()
            .context("the measurement's answer")?
            .iter()
            .map(|e| Ellipsised {
                selector: text(e, "selector"),
                text: text(e, "text"),
                title: text(e, "title"),
            })
            .collect();
        Ok(Layout {
            offences,
            ellipsised,
            measured: answer["measured"].as_u64().unwrap_or(0) as usize,
        })
    }

    /// Waits until `selector` matches an element.
    pub fn wait_for(&self, selector: &str, timeout: Duration) -> Result<()> {
        let start = Instant::now();
        loop {
            if self.count(selector)? > 0 {
                return Ok(());
            }
            if start.elapsed() > timeout {
                let shot = self.screenshot("failed");
                bail!(
                    "no {selector} after {timeout:?} (screenshot {shot:?}); page text: {}; console log: {}",
                    self.text("body").unwrap_or_default(),
                    self.eval("return JSON.stringify(window.plinthErrors || [])").unwrap_or_default()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits until the text of `selector` satisfies `f`; answers that text.
    pub fn wait_text(
        &self,
        selector: &str,
        timeout: Duration,
        f: impl Fn(&str) -> bool,
    ) -> Result<String> {
        let start = Instant::now();
        let mut last = String::new();
        loop {
            if let Ok(t) = self.text(selector) {
                if f(&t) {
                    return Ok(t);
                }
                last = t;
            }
            if start.elapsed() > timeout {
                let shot = self.screenshot("failed");
                bail!(
                    "{selector} never became what was expected in {timeout:?}; last: {last:?} (screenshot {shot:?}); console log: {}",
                    self.eval("return JSON.stringify(window.plinthErrors || [])").unwrap_or_default()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// How many elements match.
    pub fn count(&self, selector: &str) -> Result<usize> {
        Ok(self
            .rt
            .block_on(self.c().find_all(Locator::Css(selector)))?
            .len())
    }

    /// The visible text of the first match.
    pub fn text(&self, selector: &str) -> Result<String> {
        self.rt.block_on(async {
            let e = self.c().find(Locator::Css(selector)).await?;
            Ok(e.text().await?)
        })
    }

    /// Clicks the first match.
    pub fn click(&self, selector: &str) -> Result<()> {
        self.rt.block_on(async {
            self.c().find(Locator::Css(selector)).await?.click().await?;
            Ok(())
        })
    }

    /// Types into the first match.
    pub fn type_into(&self, selector: &str, text: &str) -> Result<()> {
        self.rt.block_on(async {
            let e = self.c().find(Locator::Css(selector)).await?;
            e.clear().await?;
            e.send_keys(text).await?;
            Ok(())
        })
    }

    /// Chooses an option of a `<select>` by value.
    pub fn select(&self, selector: &str, value: &str) -> Result<()> {
        self.rt.block_on(async {
            let e = self.c().find(Locator::Css(selector)).await?;
            e.select_by_value(value).await?;
            Ok(())
        })
    }

    /// Saves a screenshot as `target/console-screenshots/NAME.png`; answers its path.
    pub fn screenshot(&self, name: &str) -> Result<PathBuf> {
        let png = self.rt.block_on(self.c().screenshot())?;
        let dir = screenshot_dir();
        std::fs::create_dir_all(&dir)?;
        let path = dir.join(format!("{name}.png"));
        std::fs::write(&path, png)?;
        Ok(path)
    }
}

/// `target/console-screenshots`.
pub fn screenshot_dir() -> PathBuf {
    let bins = bin_dir();
    bins.parent().unwrap_or(&bins).join("console-screenshots")
}

impl Drop for Browser {
    fn drop(&mut self) {
        if let Some(c) = self.client.take() {
            let _ = self
                .rt
                .block_on(async { tokio::time::timeout(Duration::from_secs(10), c.close()).await });
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
