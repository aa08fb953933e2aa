//! The FAKE Daytona (tests/peer/daytona/fake_daytona.py; not Daytona) and the two checks of its
//! contract: against Daytona's OpenAPI documents (vendored in [`SPECS_DIR`], pinned by sha256;
//! tests/peer/daytona/contract.py) and against Daytona's own client (the official Python SDK,
//! `daytona==0.226.1`; tests/peer/daytona/sdk_check.py). See docs/testing.md, "The fake Daytona".
//!
//! [`FakeDaytona::start`] runs tests/peer/daytona.sh (its venv is `<CARGO_TARGET_DIR or
//! ./target>/daytona-peer-venv`, or `DAYTONA_PEER_VENV`; .ci/run prepares it) on a free loopback
//! port, with a request log and a sandbox folder of its own; [`shared`] is one per test binary. A
//! fake stops when it is dropped or when the test binary exits (its standard input closes). A fake
//! that cannot start fails the test, never skips it, with what the script printed. These tests need
//! no database.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::sync::{mpsc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How long a first start may take: it creates the venv and installs into it.
const READY_TIMEOUT: Duration = Duration::from_secs(300);

/// Daytona's two OpenAPI documents, vendored with their licence and sha256 pin
/// (`tests/peer/daytona/specs/README.md`), relative to the repository root. The Python checks are
/// always pointed here, so a `DAYTONA_SPECS_DIR` left in the environment cannot swap them.
pub const SPECS_DIR: &str = "tests/peer/daytona/specs";

/// Fakes' folders are `<temp>/fake-daytona-test-<pid>-*`.
const DIR_PREFIX: &str = "fake-daytona-test-";

/// A running fake Daytona.
pub struct FakeDaytona {
    /// `http://127.0.0.1:<port>`: the server root (test hooks under `/_fake/`).
    pub url: String,
    /// `<url>/api`: what a Daytona client is configured with.
    pub api_url: String,
    /// The one key the fake accepts (`Authorization: Bearer <key>`).
    pub api_key: String,
    /// The JSONL log of every API and toolbox request and its answer (`DAYTONA_FAKE_LOG`).
    pub log_path: PathBuf,
    /// What the fake printed on standard error.
    pub stderr_path: PathBuf,
    dir: PathBuf,
    port: u16,
    child: Mutex<Child>,
    stdin: Mutex<Option<ChildStdin>>,
    owned: bool,
}

impl FakeDaytona {
    /// The fake's process id (its Python's: the launcher execs it). The snapshot bench lowers
    /// the priority of the snapshot's own fake with it (`--source-nice`).
    #[allow(dead_code)]
    pub fn pid(&self) -> u32 {
        self.child.lock().map(|c| c.id()).unwrap_or(0)
    }

    /// Starts a fake with these extra environment variables (e.g. `DAYTONA_FAKE_SNAPSHOTS`) and
    /// waits until it has printed its address.
    pub fn start(env: &[(&str, &str)]) -> FakeDaytona {
        Self::start_in(env, true)
    }

    fn start_in(env: &[(&str, &str)], owned: bool) -> FakeDaytona {
        sweep_abandoned();
        let dir = tempfile::Builder::new()
            .prefix(&format!("{DIR_PREFIX}{}-", std::process::id()))
            .tempdir()
            .expect("the fake Daytona's folder")
            .keep();
        let log_path = dir.join("requests.jsonl");
        let stderr_path = dir.join("fake.stderr");
        let root = dir.join("sandboxes");
        std::fs::create_dir_all(&root).expect("the fake's sandbox folder");
        let mut command = Command::new("bash");
        command
            .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/peer/daytona.sh"))
            .arg(venv_dir())
            .env("PORT", "0")
            .env("DAYTONA_FAKE_LOG", &log_path)
            .env("DAYTONA_FAKE_ROOT", &root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr_path).expect("the fake's stderr file"));
        for (name, value) in env {
            command.env(name, value);
        }
        let mut child = command.spawn().expect("start tests/peer/daytona.sh");
        let stdout = child.stdout.take().expect("the fake's stdout");
        let (lines, received) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if lines.send(line).is_err() {
                    break;
                }
            }
        });
        let started = Instant::now();
        let (mut url, mut key) = (None, None);
        while url.is_none() || key.is_none() {
            match received.recv_timeout(Duration::from_millis(200)) {
                Ok(line) => {
                    if let Some(v) = line.strip_prefix("DAYTONA_URL=") {
                        url = Some(v.to_string());
                    } else if let Some(v) = line.strip_prefix("DAYTONA_API_KEY=") {
                        key = Some(v.to_string());
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let _ = child.wait();
                    panic!("the fake Daytona's script ended before it served:\n{}", read(&stderr_path));
                }
            }
            assert!(
                started.elapsed() < READY_TIMEOUT,
                "the fake Daytona did not start within {READY_TIMEOUT:?}:\n{}",
                read(&stderr_path)
            );
        }
        let url = url.unwrap_or_default();
        let port = url.rsplit(':').next().and_then(|p| p.parse().ok()).expect("a port in DAYTONA_URL");
        let stdin = child.stdin.take();
        FakeDaytona {
            api_url: format!("{url}/api"),
            url,
            api_key: key.unwrap_or_default(),
            log_path,
            stderr_path,
            dir,
            port,
            child: Mutex::new(child),
            stdin: Mutex::new(stdin),
            owned,
        }
    }

    /// The venv's Python, which has the SDK and jsonschema.
    pub fn python(&self) -> PathBuf {
        venv_dir().join("bin/python")
    }

    /// Runs one of tests/peer/daytona/*.py with the venv's Python, `DAYTONA_URL`,
    /// `DAYTONA_API_URL` and `DAYTONA_API_KEY` set to this fake's.
    pub fn run_script(&self, script: &str, args: &[&str]) -> Output {
        Command::new(self.python())
            .arg(script_path(script))
            .args(args)
            .env("DAYTONA_URL", &self.url)
            .env("DAYTONA_API_URL", &self.api_url)
            .env("DAYTONA_API_KEY", &self.api_key)
            .env("DAYTONA_SPECS_DIR", Path::new(env!("CARGO_MANIFEST_DIR")).join(SPECS_DIR))
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdin(Stdio::null())
            .output()
            .expect("run a Python check")
    }

    /// Requests answered so far per route (`GET /sandbox/{sandboxIdOrName}`,
    /// `POST /toolbox/{sandboxId}/process/execute`, ...).
    pub fn request_counts(&self) -> BTreeMap<String, u64> {
        let answer = self.control("GET", "/_fake/requests", None);
        serde_json::from_value(answer["counts"].clone()).expect("request counts")
    }

    /// Zeroes the request counts.
    pub fn reset_request_counts(&self) {
        self.control("POST", "/_fake/requests/reset", Some(&serde_json::json!({})));
    }

    /// Merges into the fake's hooks (fake_daytona.py's header lists them; `null` removes one),
    /// e.g. `{"buildSeconds": 5}`, `{"names": {"x": {"buildFail": "reason"}}}`,
    /// `{"redirect": {...}}`, `{"toolboxProxyUrl": "..."}`, `{"fail": [...]}`.
    pub fn set_hooks(&self, hooks: serde_json::Value) -> serde_json::Value {
        self.control("POST", "/_fake/hooks", Some(&hooks))
    }

    /// Sets a sandbox's fields now (`{"state": "stopped"}`, `{"state": "error", "errorReason":
    /// ".."}`, `{"toolboxProxyUrl": ".."}`); answers the sandbox, with its folder as `dir`.
    pub fn set_sandbox(&self, id_or_name: &str, fields: serde_json::Value) -> serde_json::Value {
        self.control("POST", &format!("/_fake/sandbox/{id_or_name}"), Some(&fields))
    }

    /// Moves the fake's clock `seconds` on: transitions and Daytona's intervals (auto-stop,
    /// -archive, -delete, measured from each sandbox's last activity) due meanwhile fire. No test
    /// waits for Daytona's minutes.
    pub fn advance_clock(&self, seconds: u64) {
        self.control("POST", "/_fake/clock", Some(&serde_json::json!({"advance_seconds": seconds})));
    }

    /// How far tests have moved the fake's clock, in seconds.
    pub fn clock_offset(&self) -> f64 {
        self.control("GET", "/_fake/clock", None)["offsetSeconds"].as_f64().expect("the fake's clock")
    }

    /// Every sandbox the fake has had, destroyed ones too, each with its folder as `dir`.
    pub fn sandboxes(&self) -> Vec<serde_json::Value> {
        serde_json::from_value(self.control("GET", "/_fake/sandboxes", None)).expect("the fake's sandboxes")
    }

    /// One request to the fake's own control routes (no key needed); the JSON answer.
    fn control(&self, method: &str, path: &str, body: Option<&serde_json::Value>) -> serde_json::Value {
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).expect("connect to the fake Daytona");
        s.set_read_timeout(Some(Duration::from_secs(30))).expect("a read timeout");
        write!(
            s,
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.port,
            body.len()
        )
        .expect("send to the fake Daytona");
        let mut answer = String::new();
        s.read_to_string(&mut answer).expect("the fake Daytona's answer");
        let (head, json) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
        assert!(head.starts_with("HTTP/1.1 200"), "{method} {path}: {head}\n{json}");
        serde_json::from_str(json).unwrap_or_else(|e| panic!("{method} {path}: {e}: {json}"))
    }

    /// Asserts, with contract.py, that every request in this fake's log (the SDK's, our client's)
    /// matches an operation of Daytona's documents and every answer validates against them.
    pub fn assert_log_matches_the_documents(&self) {
        let log = self.log_path.to_string_lossy().into_owned();
        let out = self.run_script("contract.py", &["check-log", &log]);
        assert_ran("contract.py check-log (the requests in the fake's log and its answers)", &out, self);
    }

    /// The request log's lines.
    pub fn log_lines(&self) -> Vec<serde_json::Value> {
        read(&self.log_path).lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
    }
}

impl Drop for FakeDaytona {
    fn drop(&mut self) {
        if let Ok(mut stdin) = self.stdin.lock() {
            stdin.take(); // end of file: the fake stops
        }
        if let Ok(mut child) = self.child.lock() {
            let deadline = Instant::now() + Duration::from_secs(10);
            while child.try_wait().ok().flatten().is_none() {
                if Instant::now() > deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        if self.owned && !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        } else if std::thread::panicking() {
            eprintln!("fake Daytona: kept {} (requests.jsonl, fake.stderr)", self.dir.display());
        }
    }
}

/// One fake per test binary, started on first use; it stops when the binary exits.
pub fn shared() -> &'static FakeDaytona {
    static SHARED: OnceLock<FakeDaytona> = OnceLock::new();
    SHARED.get_or_init(|| FakeDaytona::start_in(&[], false))
}

/// `<CARGO_TARGET_DIR or ./target>/daytona-peer-venv`, or `DAYTONA_PEER_VENV`.
pub fn venv_dir() -> PathBuf {
    crate::peer::venv_in_target("DAYTONA_PEER_VENV", "daytona-peer-venv")
}

/// tests/peer/daytona/<name>
pub fn script_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peer/daytona").join(name)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// Removes the folders of fakes whose test process has exited (a shared fake is never dropped).
fn sweep_abandoned() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(DIR_PREFIX) else {
            continue;
        };
        let pid = rest.split('-').next().unwrap_or_default();
        if !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()) && !Path::new("/proc").join(pid).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Asserts a Python check succeeded, showing what it printed either way on failure.
fn assert_ran(what: &str, output: &Output, fake: &FakeDaytona) {
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{what} failed ({}):\n{stdout}\n{stderr}\nthe fake's stderr:\n{}",
        output.status,
        read(&fake.stderr_path)
    );
}

/// The two documents are the ones pinned in tests/peer/daytona/specs/README.md, and the contract
/// check is not vacuous: each mismatch planted in a log is reported, and a changed document fails
/// the pin.
#[test]
fn daytona_specs_are_the_pinned_ones() {
    let fake = shared();
    let out = fake.run_script("contract.py", &["pin"]);
    assert_ran("contract.py pin", &out, fake);
    let out = fake.run_script("contract.py", &["self-test"]);
    assert_ran("contract.py self-test", &out, fake);
}

/// Daytona's official SDK creates a sandbox by name with labels, gets it by name, lists by
/// labels (following the cursor), runs commands, uploads and downloads files, stops, starts and
/// deletes it against the fake, and meets what the hooks produce (a failed build, a start that
/// fails, an old daemon, a stopped sandbox); then every request the SDK sent matches a documented
/// operation and every answer validates against the documents.
#[test]
fn daytona_sdk_agrees_with_the_fake() {
    let fake = FakeDaytona::start(&[]);
    let out = fake.run_script("sdk_check.py", &[]);
    assert_ran("sdk_check.py (the official SDK against the fake)", &out, &fake);
    let counts = fake.request_counts();
    for route in [
        "POST /sandbox",
        "GET /sandbox/{sandboxIdOrName}",
        "GET /sandbox",
        "DELETE /sandbox/{sandboxIdOrName}",
        "POST /toolbox/{sandboxId}/process/execute",
        "POST /toolbox/{sandboxId}/files/bulk-upload",
        "POST /toolbox/{sandboxId}/files/bulk-download",
    ] {
        assert!(counts.get(route).copied().unwrap_or(0) > 0, "the SDK never called {route}: {counts:?}");
    }
    fake.assert_log_matches_the_documents();
}

/// Every route the fake serves, error paths and test hooks included, answers as asserted, and
/// every one of those answers validates against the documents.
#[test]
fn daytona_fake_routes_match_the_documents() {
    let fake = FakeDaytona::start(&[]);
    let out = fake.run_script("contract.py", &["drive", &fake.url, &fake.api_key]);
    assert_ran("contract.py drive", &out, &fake);
    fake.assert_log_matches_the_documents();
    assert!(fake.log_lines().len() > 100, "the drive logged too little: {}", fake.log_lines().len());
}
