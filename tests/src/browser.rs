//! A real browser for the console's tests: Debian's `chromium`, headless, driven over WebDriver by
//! `chromedriver` (through fantoccini), with a fresh profile each time. The methods block, so tests
//! read like the rest of the harness.

use crate::{bin_dir, wait_until};
use anyhow::{bail, Context, Result};
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{json, Value};
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
