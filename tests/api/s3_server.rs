//! An S3-compatible server for the snapshot tests: moto (`moto[s3]` and its server, pinned in
//! tests/peer/s3-requirements.txt), started once per test binary by tests/peer/s3.sh on a free
//! loopback port, with one bucket. It stops when the test binary exits (its standard input closes).
//! Its venv is `<CARGO_TARGET_DIR or ./target>/s3-peer-venv` (or `S3_PEER_VENV`), which .ci/run
//! prepares before the tests (`s3.sh --install-only`). A server that cannot start fails the test,
//! never skips it, with what s3.sh printed.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

pub const BUCKET: &str = "agenticos-snapshots-test";

struct Server {
    port: u16,
    settings: Vec<(&'static str, &'static str)>,
    _child: Child,
}

fn server() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(|| {
        let port = crate::peer::free_port().expect("a free port");
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/peer/s3.sh");
        let log = std::env::temp_dir().join(format!("s3-test-peer-{}.log", std::process::id()));
        let mut child = Command::new("bash")
            .arg(script)
            .arg(venv_dir())
            .env("PORT", port.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("the S3 server's log"))
            .spawn()
            .expect("start the S3-compatible server");
        // A venv .ci/run did not prepare is installed now: allow for it.
        let started = Instant::now();
        loop {
            if request(port, "PUT", &format!("/{BUCKET}")).is_some_and(|r| r.starts_with("HTTP/1.1 200")) {
                break;
            }
            let exited = child.try_wait().ok().flatten();
            let why = std::fs::read_to_string(&log).unwrap_or_default();
            assert!(exited.is_none(), "the S3-compatible server's script ended ({exited:?}):\n{why}");
            assert!(started.elapsed() < Duration::from_secs(300), "the S3-compatible server did not start:\n{why}");
            std::thread::sleep(Duration::from_millis(200));
        }
        let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
        let settings = vec![
            ("AGENTICOS_SNAPSHOT_S3_BUCKET", BUCKET),
            ("AGENTICOS_SNAPSHOT_S3_ENDPOINT", leak(format!("http://127.0.0.1:{port}"))),
            ("AGENTICOS_SNAPSHOT_S3_REGION", "us-east-1"),
            ("AGENTICOS_SNAPSHOT_S3_ACCESS_KEY_ID", "testing"),
            ("AGENTICOS_SNAPSHOT_S3_SECRET_ACCESS_KEY", "testing"),
        ];
        Server { port, settings, _child: child }
    })
}

/// `<CARGO_TARGET_DIR or ./target>/s3-peer-venv`, or `S3_PEER_VENV`.
fn venv_dir() -> PathBuf {
    crate::peer::venv_in_target("S3_PEER_VENV", "s3-peer-venv")
}

/// The configuration that stores snapshots in the server's bucket.
pub fn settings() -> &'static [(&'static str, &'static str)] {
    &server().settings
}

/// Objects in the bucket now.
pub fn object_count() -> usize {
    objects_under("")
}

/// Objects in the bucket now whose key starts with `prefix` (an organization's `<org>/`, a
/// workspace's `<org>/<workspace>/`): what one test stored, whatever the tests beside it store in
/// the same bucket at the same time.
pub fn objects_under(prefix: &str) -> usize {
    let prefix: String = url::form_urlencoded::byte_serialize(prefix.as_bytes()).collect();
    let answer = request(server().port, "GET", &format!("/{BUCKET}?list-type=2&prefix={prefix}")).unwrap_or_default();
    answer.matches("<Key>").count()
}

/// One plain HTTP/1.1 request (moto takes unsigned ones); the whole answer.
fn request(port: u16, method: &str, path: &str) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(s, "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        .ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    Some(out)
}

/// The server's loopback port (a test may put a relay in front of it).
pub fn port() -> u16 {
    server().port
}
