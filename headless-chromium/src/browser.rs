//! Headless Chromium over WebDriver: the distribution's `chromium` driven
//! through its `chromedriver` with [`fantoccini`], so nothing is downloaded
//! at run time and the browser is the one the system keeps patched.
//!
//! Each [`Browser`] starts its own `chromedriver` on a free loopback port
//! ([`Chromedriver`]) and one session with a fresh profile directory, and
//! stops both when dropped, the browser's processes included.
//! Chromium Developer Tools Protocol commands (CPU throttling) go through
//! chromedriver's `goog/cdp/execute`, and the network events the benchmark
//! joins to the Hub's log come from its performance log.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{anyhow, Context};
use fantoccini::wd::{Capabilities, TimeoutConfiguration, WebDriverCompatibleCommand};
use fantoccini::{Client, ClientBuilder};
use serde_json::{json, Value};

use crate::driver::Chromedriver;

/// The flags Chromium needs to run headless as root in a container, and to
/// stay off the network on its own.
pub const CHROMIUM_FLAGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
];

/// The window every run uses, so layouts (and DOM counts of lazily shown
/// parts) do not depend on a default size.
pub const WINDOW_SIZE: (u32, u32) = (1280, 900);

/// Where the browser and its driver are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrowserPaths {
    /// The Chromium binary.
    pub chromium: PathBuf,
    /// The matching chromedriver.
    pub chromedriver: PathBuf,
}

fn on_path(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| names.iter().map(move |name| dir.join(name)))
        .find(|candidate| candidate.is_file())
}

impl BrowserPaths {
    /// `SCION_CHROMIUM` and `SCION_CHROMEDRIVER` when set, otherwise
    /// `chromium` (or `chromium-browser`) and `chromedriver` on `PATH`; the
    /// error says what is missing and how to install it.
    pub fn find() -> Result<BrowserPaths, String> {
        // An override that names no file counts as no browser.
        let from_env = |name: &str| {
            std::env::var_os(name)
                .map(PathBuf::from)
                .map(|path| path.is_file().then_some(path))
        };
        let chromium = from_env("SCION_CHROMIUM")
            .unwrap_or_else(|| on_path(&["chromium", "chromium-browser"]));
        let chromedriver =
            from_env("SCION_CHROMEDRIVER").unwrap_or_else(|| on_path(&["chromedriver"]));
        match (chromium, chromedriver) {
            (Some(chromium), Some(chromedriver)) => Ok(BrowserPaths {
                chromium,
                chromedriver,
            }),
            (chromium, _) => Err(format!(
                "no {} found (on Debian: apt-get install chromium chromium-driver)",
                if chromium.is_none() {
                    "chromium"
                } else {
                    "chromedriver"
                }
            )),
        }
    }

    /// For a browser test: the paths, or `None` after a one-line note when
    /// no browser is installed. With `CI=true` a browser test never skips: a
    /// missing browser is a failure.
    pub fn for_test(test: &str) -> Option<BrowserPaths> {
        match BrowserPaths::find() {
            Ok(paths) => Some(paths),
            Err(why) if std::env::var("CI").is_ok_and(|v| v == "true") => {
                panic!("{test}: CI=true and {why}; browser tests never skip in CI")
            }
            Err(why) => {
                // Past the test harness's capture, so the note is seen.
                use std::io::Write as _;
                let _ = writeln!(std::io::stderr(), "skipping {test}: {why}");
                None
            }
        }
    }
}

/// A chromedriver process and one WebDriver session of headless Chromium.
pub struct Browser {
    client: Option<Client>,
    /// Dropped after the client: ends the driver and the browser.
    driver: Chromedriver,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Starts chromedriver and a headless Chromium session with
    /// [`CHROMIUM_FLAGS`], a fresh `--user-data-dir`, the performance log on
    /// (for the network events), and `nav_timeout` as the page-load and
    /// script timeout.
    pub async fn launch(paths: &BrowserPaths, nav_timeout: Duration) -> anyhow::Result<Browser> {
        let profile = tempfile::Builder::new()
            .prefix("headless-chromium-")
            .tempdir()
            .context("create the browser profile directory")?;
        let mut browser = Browser {
            client: None,
            driver: Chromedriver::start(&paths.chromedriver).await?,
            _profile: profile,
        };
        let client = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(capabilities(&paths.chromium, browser._profile.path()))
            .connect(&browser.driver.url())
            .await
            .map_err(|e| anyhow!("start a Chromium session: {e}"))?;
        client
            .update_timeouts(TimeoutConfiguration::new(
                Some(nav_timeout),
                Some(nav_timeout),
                Some(Duration::ZERO),
            ))
            .await?;
        browser.client = Some(client);
        Ok(browser)
    }

    /// The WebDriver client.
    pub fn client(&self) -> &Client {
        self.client
            .as_ref()
            .expect("a launched browser has a session")
    }

    /// Sends a Chromium DevTools Protocol command (`Emulation.setCPUThrottlingRate`, ...).
    pub async fn cdp(&self, command: &str, params: Value) -> anyhow::Result<Value> {
        self.client()
            .issue_cmd(SessionPost {
                path: "goog/cdp/execute",
                body: json!({ "cmd": command, "params": params }),
            })
            .await
            .with_context(|| format!("CDP {command}"))
    }

    /// chromedriver's log of one kind (`performance`, `browser`) since the
    /// last read of it (reading clears it), as it answers: an array of
    /// entries with `level`, `message` and `timestamp`.
    async fn read_log(&self, kind: &str) -> anyhow::Result<Value> {
        self.client()
            .issue_cmd(SessionPost {
                path: "se/log",
                body: json!({ "type": kind }),
            })
            .await
            .with_context(|| format!("read the {kind} log"))
    }

    /// The performance log's DevTools events since the last call (reading
    /// clears it), each the `message` object: `{"method": ..., "params": ...}`.
    pub async fn devtools_events(&self) -> anyhow::Result<Vec<Value>> {
        let entries = self.read_log("performance").await?;
        Ok(entries
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|entry| entry["message"].as_str())
            .filter_map(|text| serde_json::from_str::<Value>(text).ok())
            .map(|mut message| message["message"].take())
            .collect())
    }

    /// The console's entries since the last call (reading clears them),
    /// each with its `level` (`SEVERE` for an error) and `message`.
    pub async fn console_entries(&self) -> anyhow::Result<Vec<Value>> {
        let entries = self.read_log("browser").await?;
        Ok(entries.as_array().cloned().unwrap_or_default())
    }

    /// Ends the session, then the driver.
    pub async fn close(mut self) {
        if let Some(client) = self.client.take() {
            let _ = client.close().await;
        }
    }
}

fn capabilities(chromium: &Path, profile: &Path) -> Capabilities {
    let mut args: Vec<String> = CHROMIUM_FLAGS.iter().map(|f| f.to_string()).collect();
    args.push(format!("--user-data-dir={}", profile.display()));
    args.push(format!("--window-size={},{}", WINDOW_SIZE.0, WINDOW_SIZE.1));
    let mut caps = Capabilities::new();
    caps.insert(
        "goog:chromeOptions".into(),
        json!({ "binary": chromium, "args": args }),
    );
    caps.insert(
        "goog:loggingPrefs".into(),
        json!({ "performance": "ALL", "browser": "ALL" }),
    );
    caps
}

/// A POST to a chromedriver extension endpoint of the current session
/// (`goog/cdp/execute` for a DevTools command, `se/log` to read a log),
/// sent with [`Client::issue_cmd`].
#[derive(Debug)]
pub struct SessionPost {
    /// The endpoint below `session/{id}/`.
    pub path: &'static str,
    /// The JSON body.
    pub body: Value,
}

impl WebDriverCompatibleCommand for SessionPost {
    fn endpoint(
        &self,
        base_url: &url::Url,
        session_id: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base_url.join(&format!(
            "session/{}/{}",
            session_id.unwrap_or(""),
            self.path
        ))
    }

    fn method_and_body(&self, _request_url: &url::Url) -> (http::Method, Option<String>) {
        (http::Method::POST, Some(self.body.to_string()))
    }
}
