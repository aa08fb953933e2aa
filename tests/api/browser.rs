//! Headless Chromium for the few tests that need htmx running in a real browser.
//!
//! docs/style.md: browser tests only for flows that need htmx running; keep them few. Everything
//! else is asserted on parsed HTML from the reqwest client.
//!
//! Chromium and chromedriver come from Debian (`apt-get install chromium chromium-driver`):
//! `/usr/bin/chromium` and `/usr/bin/chromedriver`, or the paths in the environment variables
//! `CHROME_BIN` and `CHROMEDRIVER`. Each [`Browser`] starts its own chromedriver on a free
//! loopback port with a fresh, temporary Chromium profile, so tests can run in parallel.
//!
//! **A missing browser.** With `CI=true` a missing browser must *fail* the test: CI installs
//! it, and a browser test that silently skips there is a test that never runs. Anywhere else a
//! test may skip with a printed message. [`browser_or_skip`] implements exactly that:
//!
//! ```ignore
//! db_test! {
//!     async fn a_probe_result_is_swapped_into_the_dialog(app: TestApp) -> anyhow::Result<()> {
//!         if !browser::browser_or_skip("a_probe_result_is_swapped_into_the_dialog") {
//!             return Ok(());
//!         }
//!         let browser = Browser::start().await?;
//!         browser.goto(&format!("{}/login", app.address)).await?;
//!         browser.fill("#email", "owner@example.com").await?;
//!         browser.fill("#password", "correct horse battery").await?;
//!         browser.click("button[type=submit]").await?;
//!         browser.wait_for("nav.sidebar-nav").await?;
//!         assert_eq!(browser.current_path().await?, "/");
//!         browser.close().await
//!     }
//! }
//! ```
//!
//! Every wait here is bounded: [`Browser::start`] polls chromedriver's `/status` with a
//! backoff until a deadline, and the element helpers use fantoccini's wait with
//! [`Browser::wait_timeout`]; nothing sleeps a fixed time.
#![allow(dead_code)] // a helper module: not every test binary uses every helper

use std::{
    fs::File,
    io::{Read, Write},
    net::{TcpListener, TcpStream},
    os::unix::process::CommandExt,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{anyhow, bail, Context, Result};
use fantoccini::{elements::Element, wd::TimeoutConfiguration, Client, ClientBuilder, Locator};

/// How long the element helpers wait for an element (or its text) to appear: only a bound, so a
/// lost click or a page that never comes fails instead of hanging; a wait that succeeds returns at
/// once. Thirty seconds, as long as a page load: in a full run on two cores (three test threads,
/// several Chromiums starting) a page or a swap once took longer than 10 s.
const DEFAULT_WAIT: Duration = Duration::from_secs(30);
/// How long chromedriver may take to answer `/status` with `ready: true`.
const DRIVER_READY: Duration = Duration::from_secs(20);
/// How long creating the session (Chromium's start) may take.
const SESSION_START: Duration = Duration::from_secs(30);
/// Navigation and script limits inside the session, so a hung page fails instead of hanging.
const PAGE_LOAD: Duration = Duration::from_secs(30);
const SCRIPT: Duration = Duration::from_secs(10);
/// Attempts to start chromedriver, in case another process took the free port first.
const DRIVER_ATTEMPTS: usize = 3;

const DEFAULT_CHROMEDRIVER: &str = "/usr/bin/chromedriver";
const DEFAULT_CHROME: &str = "/usr/bin/chromium";

/// A headless Chromium session driven through its own chromedriver.
///
/// End it with [`Browser::close`]; if a test panics first, `Drop` kills chromedriver and the
/// Chromium it started (they share a process group), and the temporary profile is removed.
pub struct Browser {
    /// The fantoccini client, for anything the helpers below do not cover.
    pub client: Client,
    driver: Child,
    driver_ended: bool,
    /// Holds the Chromium profile and chromedriver's log; deleted when the browser drops.
    _scratch: tempfile::TempDir,
    wait: Duration,
}

/// The chromedriver binary: `CHROMEDRIVER`, or `/usr/bin/chromedriver`.
#[must_use]
pub fn chromedriver_path() -> PathBuf {
    env_path("CHROMEDRIVER", DEFAULT_CHROMEDRIVER)
}

/// The Chromium binary: `CHROME_BIN`, or `/usr/bin/chromium`.
#[must_use]
pub fn chrome_path() -> PathBuf {
    env_path("CHROME_BIN", DEFAULT_CHROME)
}

/// Whether both chromedriver and Chromium are installed where [`Browser::start`] looks.
///
/// With env `CI=true` a missing browser must fail the test; otherwise a test may skip with a
/// printed message. Use [`browser_or_skip`], which applies that rule, at the top of a test.
#[must_use]
pub fn browser_available() -> bool {
    chromedriver_path().is_file() && chrome_path().is_file()
}

/// `true` when the browser is there. When it is not: panics under `CI=true` (a missing browser
/// fails the test in CI), otherwise prints why `test` is skipped and returns `false`.
///
/// # Panics
/// When the browser is missing and `CI` is `true` (or `1`).
#[must_use]
pub fn browser_or_skip(test: &str) -> bool {
    if browser_available() {
        return true;
    }
    let why = format!(
        "no headless browser: need chromedriver at {} and Chromium at {} \
         (set CHROMEDRIVER / CHROME_BIN, or `apt-get install chromium chromium-driver`)",
        chromedriver_path().display(),
        chrome_path().display(),
    );
    assert!(!is_ci(), "{test}: {why}; CI=true requires browser tests to run");
    eprintln!("skipping {test}: {why}");
    false
}

fn is_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v.eq_ignore_ascii_case("true") || v == "1")
}

fn env_path(var: &str, default: &str) -> PathBuf {
    match std::env::var_os(var) {
        Some(v) if !v.is_empty() => PathBuf::from(v),
        _ => PathBuf::from(default),
    }
}

impl Browser {
    /// Starts chromedriver on a free loopback port, waits until it is ready, and opens a
    /// headless Chromium session with a fresh temporary profile.
    pub async fn start() -> Result<Browser> {
        Self::start_with_args(&[]).await
    }

    /// Like [`Browser::start`], with extra Chromium switches after the default ones, e.g.
    /// `--force-dark-mode` (pages see `prefers-color-scheme: dark`) or `--window-size=390,844`
    /// (a later switch wins).
    pub async fn start_with_args(extra_args: &[&str]) -> Result<Browser> {
        // Two rustls crypto providers are compiled in (reqwest's and fantoccini's); pick one.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let driver_bin = chromedriver_path();
        let chrome_bin = chrome_path();
        if !driver_bin.is_file() {
            bail!("chromedriver not found at {} (set CHROMEDRIVER)", driver_bin.display());
        }
        if !chrome_bin.is_file() {
            bail!("Chromium not found at {} (set CHROME_BIN)", chrome_bin.display());
        }
        let scratch = tempfile::Builder::new()
            .prefix("agenticos-browser-")
            .tempdir()
            .context("creating a temporary directory for the browser profile")?;
        let log_path = scratch.path().join("chromedriver.log");

        let (mut driver, port) = start_driver(&driver_bin, &log_path).await?;

        let caps = capabilities(&chrome_bin, &scratch.path().join("profile"), extra_args);
        let url = format!("http://127.0.0.1:{port}");
        let connect = async {
            ClientBuilder::rustls()
                .context("building the WebDriver HTTP connector")?
                .capabilities(caps)
                .connect(&url)
                .await
                .context("opening a Chromium session")
        };
        let client = match tokio::time::timeout(SESSION_START, connect).await {
            Ok(Ok(client)) => client,
            Ok(Err(e)) => {
                kill_driver(&mut driver);
                return Err(e.context(log_tail(&log_path)));
            }
            Err(_) => {
                kill_driver(&mut driver);
                bail!("Chromium did not start within {SESSION_START:?}; {}", log_tail(&log_path));
            }
        };

        let browser = Browser { client, driver, driver_ended: false, _scratch: scratch, wait: DEFAULT_WAIT };
        browser
            .client
            .update_timeouts(TimeoutConfiguration::new(Some(SCRIPT), Some(PAGE_LOAD), Some(Duration::ZERO)))
            .await
            .context("setting the session's timeouts")?;
        Ok(browser)
    }

    /// How long the element helpers wait (default 30 s).
    #[must_use]
    pub fn wait_timeout(&self) -> Duration {
        self.wait
    }

    /// Changes how long the element helpers wait.
    pub fn set_wait_timeout(&mut self, wait: Duration) {
        self.wait = wait;
    }

    /// Navigates to `url` (absolute, or relative to the current page) and waits for the load.
    pub async fn goto(&self, url: &str) -> Result<()> {
        self.client.goto(url).await.with_context(|| format!("navigating to {url}"))
    }

    /// Waits for the element matching `css` and returns it. A lookup that fails while the page
    /// is navigating (a form's redirect, "aborted by navigation") is tried again until the wait
    /// is over, like one that finds nothing yet.
    pub async fn wait_for(&self, css: &str) -> Result<Element> {
        let deadline = Instant::now() + self.wait;
        loop {
            let error = match self.client.find(Locator::Css(css)).await {
                Ok(el) => return Ok(el),
                Err(e) => e,
            };
            if Instant::now() >= deadline {
                return Err(error).with_context(|| format!("waiting up to {:?} for `{css}`", self.wait));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until the element matching `css` shows text containing `needle` (for example
    /// after an htmx swap) and returns its whole text.
    pub async fn wait_for_text(&self, css: &str, needle: &str) -> Result<String> {
        let deadline = Instant::now() + self.wait;
        let mut pause = Duration::from_millis(20);
        let mut last = None;
        loop {
            // The element may be replaced (outerHTML swap) between find and read: retry.
            if let Ok(el) = self.client.find(Locator::Css(css)).await {
                if let Ok(text) = el.text().await {
                    if text.contains(needle) {
                        return Ok(text);
                    }
                    last = Some(text);
                }
            }
            if Instant::now() >= deadline {
                bail!("waited {:?} for `{css}` to contain {needle:?}; last text: {last:?}", self.wait);
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(250));
        }
    }

    /// Replaces the value of the input matching `css` with `text`.
    pub async fn fill(&self, css: &str, text: &str) -> Result<()> {
        let el = self.wait_for(css).await?;
        el.clear().await.with_context(|| format!("clearing `{css}`"))?;
        el.send_keys(text).await.with_context(|| format!("typing into `{css}`"))
    }

    /// Clicks the element matching `css`, once no htmx swap is under way. Content htmx has just
    /// swapped in is not yet processed until it settles (`htmx-added`, then `htmx-settling`, for
    /// the settle delay): a link clicked in that window is a plain link, not the htmx request the
    /// page means, and a click can land on what the swap is about to replace.
    pub async fn click(&self, css: &str) -> Result<()> {
        self.wait_for_settled().await?;
        let el = self.wait_for(css).await?;
        el.click().await.with_context(|| format!("clicking `{css}`"))
    }

    /// Chooses `value` in the select matching `css` as a person does (its `change` event), once
    /// no htmx swap is under way: a select just swapped in has no htmx trigger until it settles,
    /// so a change dispatched in that window sends nothing (seen under a loaded CI machine).
    pub async fn choose(&self, css: &str, value: &str) -> Result<()> {
        self.wait_for_settled().await?;
        self.wait_for(css).await?;
        let chosen = self
            .client
            .execute(
                "const s = document.querySelector(arguments[0]); s.value = arguments[1]; \
                 s.dispatchEvent(new Event('change', {bubbles: true})); return s.value;",
                vec![serde_json::json!(css), serde_json::json!(value)],
            )
            .await
            .with_context(|| format!("choosing {value:?} in `{css}`"))?;
        anyhow::ensure!(chosen == serde_json::json!(value), "`{css}` has no option {value:?}");
        Ok(())
    }

    /// Waits until no htmx swap is under way on the page (nothing swapping, settling or just
    /// added). Requests in flight do not count: a page may poll, or a test may click while one
    /// runs (a Stop button).
    pub async fn wait_for_settled(&self) -> Result<()> {
        const SWAPPING: &str = "return document.querySelector('.htmx-swapping, .htmx-settling, .htmx-added') === null;";
        let deadline = Instant::now() + self.wait;
        let mut pause = Duration::from_millis(10);
        loop {
            // A navigation under way fails the script: tried again, like an unsettled page.
            if let Ok(serde_json::Value::Bool(true)) = self.client.execute(SWAPPING, vec![]).await {
                return Ok(());
            }
            if Instant::now() >= deadline {
                bail!("waited {:?} for the page's htmx swaps to settle", self.wait);
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(100));
        }
    }

    /// The rendered (visible) text of the element matching `css`.
    pub async fn text(&self, css: &str) -> Result<String> {
        let el = self.wait_for(css).await?;
        el.text().await.with_context(|| format!("reading the text of `{css}`"))
    }

    /// The path of the current page, e.g. `/connections` (no query, no fragment).
    pub async fn current_path(&self) -> Result<String> {
        let url = self.client.current_url().await.context("reading the current URL")?;
        Ok(url.path().to_owned())
    }

    /// Saves a PNG of the viewport to `path`, creating its parent directories.
    pub async fn screenshot(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        let png = self.client.screenshot().await.context("taking a screenshot")?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            tokio::fs::create_dir_all(dir).await.with_context(|| format!("creating {}", dir.display()))?;
        }
        tokio::fs::write(path, png).await.with_context(|| format!("writing {}", path.display()))
    }

    /// Ends the session (Chromium quits) and stops chromedriver.
    pub async fn close(mut self) -> Result<()> {
        let ended = self.client.clone().close().await;
        kill_driver(&mut self.driver);
        self.driver_ended = true;
        ended.context("ending the WebDriver session")
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.driver_ended {
            kill_driver(&mut self.driver);
            self.driver_ended = true;
        }
        // `_scratch` (profile + log) is removed after this, when its field drops.
    }
}

/// Starts chromedriver on a free port and waits for `/status` to say ready. Retries with a new
/// port if the driver exits at once (another process took the port between pick and bind).
async fn start_driver(bin: &Path, log_path: &Path) -> Result<(Child, u16)> {
    let mut last_err = None;
    for _ in 0..DRIVER_ATTEMPTS {
        let port = free_port()?;
        let log = File::create(log_path).with_context(|| format!("creating {}", log_path.display()))?;
        let log_err = log.try_clone().context("duplicating the log handle")?;
        let mut child = Command::new(bin)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err)
            // Its own process group, so Drop can end chromedriver *and* the Chromium it started.
            .process_group(0)
            .spawn()
            .with_context(|| format!("starting {}", bin.display()))?;
        match wait_ready(port, &mut child).await {
            Ok(()) => return Ok((child, port)),
            Err(Ready::Exited(status)) => {
                kill_driver(&mut child);
                last_err = Some(anyhow!("chromedriver exited with {status} on port {port}; {}", log_tail(log_path)));
            }
            Err(Ready::TimedOut) => {
                kill_driver(&mut child);
                bail!("chromedriver was not ready within {DRIVER_READY:?}; {}", log_tail(log_path));
            }
        }
    }
    Err(last_err.unwrap_or_else(|| anyhow!("chromedriver did not start")))
}

enum Ready {
    Exited(std::process::ExitStatus),
    TimedOut,
}

/// Polls `GET /status` with a growing pause until `value.ready` is true, the driver exits, or
/// the deadline passes.
async fn wait_ready(port: u16, child: &mut Child) -> Result<(), Ready> {
    let deadline = Instant::now() + DRIVER_READY;
    let mut pause = Duration::from_millis(10);
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(Ready::Exited(status));
        }
        if let Ok(Ok(true)) = tokio::task::spawn_blocking(move || status_ready(port)).await {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(Ready::TimedOut);
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(250));
    }
}

/// One `GET /status` over plain HTTP/1.1 (blocking, loopback, each step bounded by a 2 s
/// timeout); true when the JSON body has `value.ready == true`. Chromedriver keeps the
/// connection open, so the body is read up to its `Content-Length`.
fn status_ready(port: u16) -> std::io::Result<bool> {
    let step = Duration::from_secs(2);
    let mut stream = TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), step)?;
    stream.set_read_timeout(Some(step))?;
    stream.set_write_timeout(Some(step))?;
    let request = format!("GET /status HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes())?;
    let mut response = Vec::new();
    let mut chunk = [0u8; 2048];
    let body = loop {
        let n = stream.read(&mut chunk)?;
        response.extend_from_slice(&chunk[..n]);
        if let Some(body) = complete_body(&response) {
            break body;
        }
        if n == 0 || response.len() > 64 * 1024 {
            return Ok(false);
        }
    };
    let ready = serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v.pointer("/value/ready").and_then(serde_json::Value::as_bool))
        .unwrap_or(false);
    Ok(ready)
}

/// The body of a buffered HTTP response once all `Content-Length` bytes of it are there.
fn complete_body(response: &[u8]) -> Option<&[u8]> {
    let head_end = response.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = std::str::from_utf8(&response[..head_end]).ok()?;
    let length: usize = head.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        if name.trim().eq_ignore_ascii_case("content-length") {
            value.trim().parse().ok()
        } else {
            None
        }
    })?;
    response.get(head_end..head_end + length)
}

fn free_port() -> Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").context("picking a free port")?;
    Ok(listener.local_addr()?.port())
}

fn capabilities(chrome: &Path, profile: &Path, extra_args: &[&str]) -> serde_json::Map<String, serde_json::Value> {
    let mut args = vec![
        "--headless=new".to_owned(),
        "--no-sandbox".to_owned(),
        "--disable-gpu".to_owned(),
        "--disable-dev-shm-usage".to_owned(),
        "--disable-quic".to_owned(),
        "--no-first-run".to_owned(),
        "--disable-background-networking".to_owned(),
        "--disable-component-update".to_owned(),
        "--disable-sync".to_owned(),
        "--window-size=1280,900".to_owned(),
        format!("--user-data-dir={}", profile.display()),
    ];
    args.extend(extra_args.iter().map(|a| (*a).to_owned()));
    let caps = serde_json::json!({
        "browserName": "chrome",
        "pageLoadStrategy": "normal",
        "goog:chromeOptions": {
            "binary": chrome.to_string_lossy(),
            "args": args,
        },
    });
    match caps {
        serde_json::Value::Object(map) => map,
        _ => serde_json::Map::new(),
    }
}

/// Kills chromedriver's whole process group (it and any Chromium it started), then reaps it.
fn kill_driver(child: &mut Child) {
    // Even when chromedriver itself has exited, a Chromium it started may still be in the group.
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", child.id())])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    let _ = child.kill();
    let _ = child.wait();
}

/// The last lines of chromedriver's log, to explain a failed start.
fn log_tail(log_path: &Path) -> String {
    match std::fs::read_to_string(log_path) {
        Ok(text) if !text.trim().is_empty() => {
            let lines: Vec<&str> = text.lines().collect();
            let tail = lines[lines.len().saturating_sub(15)..].join("\n");
            format!("chromedriver log ({}):\n{tail}", log_path.display())
        }
        _ => format!("chromedriver log at {} is empty", log_path.display()),
    }
}
