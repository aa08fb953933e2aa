#![allow(dead_code)]
//! The real sandboxd as a test peer: `tests/peer/run.sh`, one per test that
//! needs special options ([`Peer::start`]) or one per test binary
//! ([`shared`]).
//!
//! Each peer gets a free 127.0.0.1 port, a fresh temporary directory (its
//! workspace root, its scratch space, and `peer.log` with everything it
//! prints) and the venv at `<target>/sandboxd-peer-venv`, created on first use
//! and reused (run.sh holds a lock while it creates it, so parallel tests wait
//! for one install instead of racing). Starting waits until `GET /healthz`
//! answers, polling with a short backoff.
//!
//! Dropping a [`Peer`] sends SIGTERM to its process group and waits for it to
//! exit; if the test is panicking, its directory is kept and the log's path
//! printed. A peer also stops when the test binary exits however it exits
//! (`PEER_STOP_ON_STDIN_EOF`), which is what ends the [`shared`] one; the
//! directories such peers leave are removed when a later peer starts.
//!
//! Make a new `reqwest::Client` per test: tests run on runtimes of their own,
//! and a pooled connection does not outlive the runtime that opened it.

use std::fs::File;
use std::io::Read as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use tokio::sync::OnceCell;

/// How long a first start may take: it creates the venv and installs into it.
const READY_TIMEOUT: Duration = Duration::from_secs(300);

/// How long a stopping peer gets before its process group is killed.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// Peers' directories are `<temp>/sandboxd-test-peer-*` (not `sandboxd-peer-*`,
/// which run.sh uses for its own defaults).
const DIR_PREFIX: &str = "sandboxd-test-peer-";

/// In a peer's directory: the id of the test process that started it.
const OWNER_FILE: &str = "owner.pid";

/// In a peer's directory: kept for a person to read (a failed start or test).
const KEPT_FILE: &str = "KEPT";

/// How a peer is started. The default is the pinned release with the library's
/// defaults (see run.sh) and a random token.
#[derive(Debug, Clone, Default)]
pub struct PeerOptions {
    /// Extra environment, e.g. `SANDBOXD_MAX_SESSIONS_PER_TENANT=1`.
    pub env: Vec<(String, String)>,
    /// Route paths to remove before serving (`PEER_DROP_ROUTES`): a host
    /// without them, as an older release would be.
    pub drop_routes: Vec<String>,
    /// The service token; a random one when `None`.
    pub token: Option<String>,
    /// Another pydantic-ai-backend release (`PEER_PACKAGE_VERSION`), in a venv
    /// of its own beside the default one.
    pub package_version: Option<String>,
    /// How long to wait for `/healthz`; five minutes when `None`.
    pub ready_timeout: Option<Duration>,
    /// Run the peer without the capabilities that let root read any file (`setpriv` drops
    /// `dac_override` and `dac_read_search` from its bounding set), so a folder with mode 000 is
    /// unreadable to it, as it would be to a host that does not run as root.
    pub without_read_override: bool,
}

impl PeerOptions {
    pub fn env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.push((name.into(), value.into()));
        self
    }

    pub fn drop_route(mut self, path: impl Into<String>) -> Self {
        self.drop_routes.push(path.into());
        self
    }

    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    pub fn without_read_override(mut self) -> Self {
        self.without_read_override = true;
        self
    }

    pub fn package_version(mut self, version: impl Into<String>) -> Self {
        self.package_version = Some(version.into());
        self
    }
}

/// A running sandboxd.
#[derive(Debug)]
pub struct Peer {
    /// `http://127.0.0.1:<port>`
    pub url: String,
    /// The service token.
    pub token: String,
    /// `SANDBOXD_WORKSPACE_ROOT`: session `x`'s files are in `<root>/x/workspace`.
    pub workspace_root: PathBuf,
    /// Everything the peer printed.
    pub log_path: PathBuf,
    child: Mutex<Child>,
    /// The peer stops when this pipe closes; kept open for its lifetime.
    stdin: Mutex<Option<ChildStdin>>,
    dir: Option<tempfile::TempDir>,
    options: PeerOptions,
    scratch: PathBuf,
}

impl Peer {
    /// Stops the peer: its address refuses connections until [`Peer::start_again`].
    pub fn stop_now(&mut self) {
        self.stop();
        if let Ok(mut stdin) = self.stdin.lock() {
            stdin.take();
        }
    }

    /// Starts a stopped peer again on the same port, token and workspace root (the host forgot
    /// its sessions; their files are still on disk), and waits until it answers.
    pub async fn start_again(&mut self) -> anyhow::Result<()> {
        let log = std::fs::OpenOptions::new().append(true).open(&self.log_path).context("opening the peer log")?;
        let log_err = log.try_clone().context("sharing the peer log")?;
        let mut command =
            peer_command(&self.options, self.port(), &self.token, &self.workspace_root, &self.scratch, log, log_err);
        let mut child = command.spawn().context("starting tests/peer/run.sh again")?;
        let stdin = child.stdin.take();
        *self.child.get_mut().map_err(|_| anyhow::anyhow!("peer lock poisoned"))? = child;
        *self.stdin.get_mut().map_err(|_| anyhow::anyhow!("peer lock poisoned"))? = stdin;
        self.wait_ready(self.options.ready_timeout.unwrap_or(READY_TIMEOUT)).await
    }

    /// Starts a peer and waits until it answers `/healthz`.
    pub async fn start(options: PeerOptions) -> anyhow::Result<Peer> {
        // A free port can be taken between our probe and the peer's bind; that
        // shows as "address already in use" in its log, and a new port is tried.
        let mut attempt = 0;
        loop {
            attempt += 1;
            match Self::start_once(&options).await {
                Err(StartError::PortTaken(error)) if attempt < 3 => {
                    eprintln!("sandboxd peer: port taken, retrying ({error:#})");
                }
                Err(StartError::PortTaken(error) | StartError::Other(error)) => return Err(error),
                Ok(peer) => return Ok(peer),
            }
        }
    }

    /// The last lines the peer printed.
    pub fn log_tail(&self, lines: usize) -> String {
        tail(&self.log_path, lines)
    }

    /// The peer's port.
    pub fn port(&self) -> u16 {
        self.url.rsplit(':').next().and_then(|port| port.parse().ok()).unwrap_or_default()
    }

    /// A request to the peer's own API (`path` from `/`), with its service token: what a test
    /// asks or does at the host directly, behind the console's back.
    pub fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        reqwest::Client::new().request(method, format!("{}{path}", self.url)).header("X-Sandbox-Token", &self.token)
    }

    /// The JSON the peer answers to `GET path`.
    pub async fn get(&self, path: &str) -> serde_json::Value {
        let r = self.request(reqwest::Method::GET, path).send().await.unwrap_or_else(|e| panic!("GET {path}: {e}"));
        r.json().await.unwrap_or_else(|e| panic!("GET {path}: not JSON: {e}"))
    }

    async fn start_once(options: &PeerOptions) -> Result<Peer, StartError> {
        sweep_abandoned();
        let dir =
            tempfile::Builder::new().prefix(DIR_PREFIX).tempdir().context("creating the peer's temporary directory")?;
        std::fs::write(dir.path().join(OWNER_FILE), std::process::id().to_string())
            .context("recording the peer's owner")?;
        let workspace_root = dir.path().join("workspaces");
        let scratch = dir.path().join("tmp");
        std::fs::create_dir_all(&workspace_root).context("creating the workspace root")?;
        std::fs::create_dir_all(&scratch).context("creating the scratch directory")?;
        let log_path = dir.path().join("peer.log");
        let log = File::create(&log_path).context("creating the peer log")?;
        let log_err = log.try_clone().context("sharing the peer log")?;

        let port = free_port().context("finding a free port")?;
        let token = options.token.clone().unwrap_or_else(|| format!("peer-{}", uuid::Uuid::new_v4().simple()));
        let command = peer_command(options, port, &token, &workspace_root, &scratch, log, log_err);
        let mut command = command;
        let mut child = command.spawn().context("starting tests/peer/run.sh")?;
        let stdin = child.stdin.take();
        let peer = Peer {
            url: format!("http://127.0.0.1:{port}"),
            token,
            workspace_root,
            log_path,
            child: Mutex::new(child),
            stdin: Mutex::new(stdin),
            dir: Some(dir),
            options: options.clone(),
            scratch,
        };
        match peer.wait_ready(options.ready_timeout.unwrap_or(READY_TIMEOUT)).await {
            Ok(()) => Ok(peer),
            Err(error) => {
                let log = peer.log_tail(40);
                let port_taken = log.contains("address already in use");
                let error = error
                    .context(format!("sandboxd peer did not start; its log is {}:\n{log}", peer.log_path.display()));
                let mut peer = peer;
                if port_taken {
                    // Nothing to look at: let Drop remove the directory.
                    return Err(StartError::PortTaken(error));
                }
                peer.keep_dir("did not start");
                Err(StartError::Other(error))
            }
        }
    }

    /// Polls `/healthz` with a growing pause until it answers 200, the peer
    /// exits, or `timeout` passes.
    async fn wait_ready(&self, timeout: Duration) -> anyhow::Result<()> {
        let http =
            reqwest::Client::builder().timeout(Duration::from_secs(2)).build().context("building an HTTP client")?;
        let health = format!("{}/healthz", self.url);
        let deadline = Instant::now() + timeout;
        let mut pause = Duration::from_millis(20);
        loop {
            if let Some(status) = self.exit_status()? {
                bail!("it exited with {status}");
            }
            if let Ok(response) = http.get(&health).send().await {
                if response.status().is_success() {
                    return Ok(());
                }
            }
            if Instant::now() >= deadline {
                bail!("/healthz did not answer within {timeout:?}");
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(500));
        }
    }

    fn exit_status(&self) -> anyhow::Result<Option<std::process::ExitStatus>> {
        let mut child = self.child.lock().map_err(|_| anyhow::anyhow!("peer lock poisoned"))?;
        Ok(child.try_wait()?)
    }

    /// Keeps the directory (and its log) for a person to read.
    fn keep_dir(&mut self, why: &str) {
        if let Some(dir) = self.dir.take() {
            let kept = dir.keep();
            let _ = std::fs::write(kept.join(KEPT_FILE), why);
            eprintln!("sandboxd peer: kept {} (log: {})", kept.display(), self.log_path.display());
        }
    }

    /// SIGTERM to the process group, then SIGKILL after a grace period.
    fn stop(&mut self) {
        let child = match self.child.get_mut() {
            Ok(child) => child,
            Err(poisoned) => poisoned.into_inner(),
        };
        if matches!(child.try_wait(), Ok(Some(_))) {
            return;
        }
        let group = format!("-{}", child.id());
        signal_group("TERM", &group);
        let deadline = Instant::now() + STOP_GRACE;
        while Instant::now() < deadline {
            if !matches!(child.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        eprintln!("sandboxd peer: did not stop within {STOP_GRACE:?}; killing it (log: {})", self.log_path.display());
        signal_group("KILL", &group);
        let _ = child.wait();
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        self.stop();
        if let Ok(mut stdin) = self.stdin.lock() {
            stdin.take();
        }
        if std::thread::panicking() {
            self.keep_dir("its test panicked");
        }
    }
}

/// The command that runs a peer on `port` with `token` and `workspace_root`.
fn peer_command(
    options: &PeerOptions,
    port: u16,
    token: &str,
    workspace_root: &Path,
    scratch: &Path,
    log: File,
    log_err: File,
) -> Command {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let run_sh = manifest_dir.join("tests/peer/run.sh");
    // Root reads any file: without these two capabilities a folder of mode 000 refuses it too.
    let mut command = if options.without_read_override {
        let mut c = Command::new("setpriv");
        c.args(["--bounding-set", "-dac_override,-dac_read_search", "bash"]);
        c
    } else {
        Command::new("bash")
    };
    command
        .arg(&run_sh)
        .arg(venv_dir())
        .current_dir(manifest_dir)
        .stdin(Stdio::piped())
        .stdout(log)
        .stderr(log_err)
        // Its own process group, so Drop reaches everything it started.
        .process_group(0);
    // Nothing of the developer's own sandboxd settings leaks in.
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        if name.starts_with("SANDBOXD_") || name.starts_with("PEER_") {
            command.env_remove(name.as_ref());
        }
    }
    command
        .env("PORT", port.to_string())
        .env("SANDBOXD_TOKEN", token)
        .env("SANDBOXD_WORKSPACE_ROOT", workspace_root)
        .env("TMPDIR", scratch)
        .env("PEER_STOP_ON_STDIN_EOF", "1")
        .env("PEER_LOG_LEVEL", "info");
    if !options.drop_routes.is_empty() {
        command.env("PEER_DROP_ROUTES", options.drop_routes.join(","));
    }
    if let Some(version) = &options.package_version {
        command.env("PEER_PACKAGE_VERSION", version);
    }
    for (name, value) in &options.env {
        command.env(name, value);
    }
    command
}

enum StartError {
    PortTaken(anyhow::Error),
    Other(anyhow::Error),
}

impl From<anyhow::Error> for StartError {
    fn from(error: anyhow::Error) -> Self {
        Self::Other(error)
    }
}

/// One peer per test binary, started on first use, with default options.
/// Tests that change the host's policy or need special options start their own.
///
/// # Panics
/// If the peer cannot start: the message has its log.
pub async fn shared() -> &'static Peer {
    static SHARED: OnceCell<Peer> = OnceCell::const_new();
    // Many tests open sessions on this one host: lift its resident ceiling (20 by default).
    let options = PeerOptions::default().env("SANDBOXD_MAX_SESSIONS", "1000");
    match SHARED.get_or_try_init(|| Peer::start(options)).await {
        Ok(peer) => peer,
        Err(error) => panic!("{error:#}"),
    }
}

/// Removes the directories of peers whose test process has exited (a shared
/// peer is never dropped: it stops with its test binary and leaves its
/// directory behind). Kept directories stay.
fn sweep_abandoned() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if !entry.file_name().to_string_lossy().starts_with(DIR_PREFIX) || path.join(KEPT_FILE).exists() {
            continue;
        }
        let Ok(owner) = std::fs::read_to_string(path.join(OWNER_FILE)) else {
            continue;
        };
        let owner = owner.trim();
        let is_pid = !owner.is_empty() && owner.bytes().all(|b| b.is_ascii_digit());
        if is_pid && !Path::new("/proc").join(owner).exists() {
            let _ = std::fs::remove_dir_all(&path);
        }
    }
}

/// A port nothing listens on right now: bind port 0, read it, let it go.
pub fn free_port() -> std::io::Result<u16> {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
    Ok(listener.local_addr()?.port())
}

/// `<CARGO_TARGET_DIR or ./target>/sandboxd-peer-venv`, or `SANDBOXD_PEER_VENV`.
fn venv_dir() -> PathBuf {
    venv_in_target("SANDBOXD_PEER_VENV", "sandboxd-peer-venv")
}

/// The folder the variable `env` names, or `<CARGO_TARGET_DIR or ./target>/<name>`: where a test
/// peer's venv lives, kept between runs.
pub fn venv_in_target(env: &str, name: &str) -> PathBuf {
    if let Some(venv) = std::env::var_os(env) {
        return PathBuf::from(venv);
    }
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|dir| if dir.is_relative() { manifest_dir.join(dir) } else { dir })
        .unwrap_or_else(|| manifest_dir.join("target"));
    target.join(name)
}

fn signal_group(signal: &str, group: &str) {
    let _ = Command::new("kill")
        .args([format!("-{signal}").as_str(), "--", group])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

fn tail(path: &Path, lines: usize) -> String {
    let mut text = String::new();
    if let Ok(mut file) = File::open(path) {
        let _ = file.read_to_string(&mut text);
    }
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
