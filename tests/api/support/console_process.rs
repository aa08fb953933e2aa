//! A console as its own process: the `agenticos` binary on a test's database and data folder,
//! `serve` started on a free port and waited for until it says it serves.

use std::path::Path;
use std::process::{Command, Stdio};

use tokio::io::AsyncBufReadExt as _;

use crate::helpers::TestDatabase;

/// `agenticos` on `database`, its vault key file in the database's folder.
pub fn agenticos(database: &TestDatabase) -> Command {
    agenticos_on(&database.url, database.dir.path())
}

/// `agenticos` on the database at `url`, with `dir` as its data folder (the vault key file there).
pub fn agenticos_on(url: &str, dir: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_agenticos"));
    c.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("DATABASE_URL", url)
        .env("AGENTICOS_VAULT_KEY_FILE", dir.join("vault.key"))
        .env("AGENTICOS_CATALOG_DIR", crate::helpers::TEST_CATALOG_DIR)
        .env("AGENTICOS_LOG", "warn")
        .current_dir(dir);
    c
}

/// Runs `c`; its standard output, asserting it succeeded.
pub fn run_ok(c: &mut Command) -> String {
    let out = c.output().expect("runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The API token `admin create-token` printed.
pub fn printed_token(text: &str) -> String {
    text.lines().find_map(|l| l.strip_prefix("API token (shown once): ")).expect("a token").to_string()
}

/// A serving console process (killed when dropped).
pub struct Console {
    pub child: tokio::process::Child,
    /// `http://127.0.0.1:<port>`
    pub address: String,
}

/// Starts `agenticos serve` of `command` on a free port; returns once it listens.
pub async fn serve(command: Command) -> Console {
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port").local_addr().expect("addr").port();
    let mut console = tokio::process::Command::from(command);
    console
        .arg("serve")
        .env("AGENTICOS_BIND", format!("127.0.0.1:{port}"))
        .env("AGENTICOS_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    let mut child = console.spawn().expect("the console starts");
    // It listens before it says it serves.
    let mut lines = tokio::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
    loop {
        let line = lines.next_line().await.expect("read").expect("the console said it serves before it ended");
        if line.contains("is serving") {
            break;
        }
    }
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Console { child, address: format!("http://127.0.0.1:{port}") }
}
