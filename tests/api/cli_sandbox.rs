//! The sandbox commands of the binary: `sandbox-runtimes`, `sandbox-token`, `doctor` (against the
//! real sandboxd peer, the pinned release and an older one).

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Output;

use agenticos::access::{Caller, Via};
use agenticos::catalog::repo::{rewrite_compose, CATALOG_FILE, VERSION_FILE};
use agenticos::catalog::RuntimeCatalog;
use agenticos::config::VaultKeySource;
use agenticos::orgs::model::Role;
use agenticos::sandbox::connections::model::Connection;
use agenticos::sandbox::connections::service::{self as connections, ConnectionInput};
use secrecy::{ExposeSecret as _, SecretString};
use tokio::sync::OnceCell;

use crate::db_test;
use crate::helpers::TestApp;
use crate::peer::{self, free_port, Peer, PeerOptions};

// ---------------------------------------------------------------------------------------------
// helpers

fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The binary with an empty environment (PATH only), run in `dir`.
fn agenticos(dir: &Path) -> tokio::process::Command {
    let mut c = tokio::process::Command::new(env!("CARGO_BIN_EXE_agenticos"));
    c.env_clear().env("PATH", std::env::var("PATH").unwrap_or_default()).current_dir(dir);
    c
}

async fn run(mut command: tokio::process::Command) -> (i32, String, String) {
    let Output { status, stdout, stderr } = command.output().await.expect("the binary runs");
    let stdout = String::from_utf8_lossy(&stdout).into_owned();
    let stderr = String::from_utf8_lossy(&stderr).into_owned();
    (status.code().unwrap_or(-1), stdout, stderr)
}

/// The owner of a new organization, as a caller of the services.
async fn owner(app: &TestApp, email: &str, org: &str) -> Caller {
    let org_id =
        agenticos::auth::service::create_owner(&app.state.db, email, SecretString::from("a long password"), org)
            .await
            .expect("create owner");
    let mut c = app.state.db.conn().await.expect("conn");
    let user_id: String = sqlx::query_scalar("SELECT id FROM users WHERE email = $1")
        .bind(email)
        .fetch_one(&mut *c)
        .await
        .expect("user id");
    Caller {
        user_id,
        email: email.to_owned(),
        org_id,
        org_name: org.to_owned(),
        role: Role::Owner,
        via: Via::Session { session_id: String::new() },
    }
}

/// Registers a connection for doctor to check, saved even when the host fails the save's own
/// check (these tests register broken hosts on purpose).
async fn add(app: &TestApp, caller: &Caller, name: &str, kind: &str, address: &str, key: Option<&str>) -> Connection {
    let input = ConnectionInput {
        name: name.to_owned(),
        kind: kind.to_owned(),
        address: address.to_owned(),
        new_key: key.map(|k| SecretString::from(k.to_owned())),
        save_anyway: true,
        ..ConnectionInput::default()
    };
    connections::create(&app.state, caller, input).await.unwrap_or_else(|e| panic!("create {name}: {e:?}"))
}

fn vault_key(app: &TestApp) -> String {
    match &app.state.config.vault.key {
        VaultKeySource::Inline(key) => key.expose_secret().to_owned(),
        VaultKeySource::File(_) => panic!("the test app has an inline vault key"),
    }
}

/// `agenticos doctor` on the app's database, with `vault_key`.
async fn doctor_with_key(app: &TestApp, vault_key: &str) -> (i32, String, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut command = agenticos(dir.path());
    command
        .env("DATABASE_URL", &app.state.config.database.url)
        .env("AGENTICOS_VAULT_KEY", vault_key)
        .env("AGENTICOS_CATALOG_DIR", repo_root().join("catalog"))
        .env("AGENTICOS_LOG", "warn")
        .arg("doctor");
    run(command).await
}

async fn doctor(app: &TestApp) -> (i32, String, String) {
    doctor_with_key(app, &vault_key(app)).await
}

/// The lines of one connection's section (`<org> / <name> (...)` up to the blank line).
fn section<'a>(out: &'a str, heading: &str) -> Vec<&'a str> {
    let lines: Vec<&str> = out.lines().collect();
    let start = lines.iter().position(|l| l.starts_with(heading)).unwrap_or_else(|| panic!("no {heading}: {out}"));
    lines[start..].iter().take_while(|l| !l.is_empty()).copied().collect()
}

/// The mark (✓, ✗ or -) and the text of one check in a section.
fn check<'a>(section: &[&'a str], name: &str) -> (&'a str, &'a str) {
    for line in section.iter().skip(1) {
        let Some((mark, rest)) = line.trim_start().split_once(' ') else { continue };
        if let Some(text) = rest.trim_start().strip_prefix(name) {
            if text.is_empty() || text.starts_with(' ') {
                return (mark, text.trim());
            }
        }
    }
    panic!("no check {name} in {section:#?}")
}

/// The real pydantic-ai-backend 0.2.36: every route but `/workspaces/trees`.
async fn older_peer() -> &'static Peer {
    static PEER: OnceCell<Peer> = OnceCell::const_new();
    PEER.get_or_init(|| async {
        Peer::start(PeerOptions::default().package_version("0.2.36")).await.unwrap_or_else(|e| panic!("{e:#}"))
    })
    .await
}

fn assert_no_secret(text: &str, secrets: &[&str]) {
    for secret in secrets {
        assert!(!text.contains(secret), "a secret was printed: {text}");
    }
}

// ---------------------------------------------------------------------------------------------
// doctor

db_test! {
    async fn doctor_passes_every_check_against_the_pinned_host(app: TestApp) {
        let peer = peer::shared().await;
        let acme = owner(&app, "ops@example.com", "Acme").await;
        add(&app, &acme, "local", "sandboxd", &peer.url, Some(&peer.token)).await;
        // A Daytona connection (the FAKE Daytona) is checked too.
        let fake = crate::daytona_fake::shared();
        add(&app, &acme, "cloud", "daytona", &fake.api_url, Some(&fake.api_key)).await;
        let (code, out, err) = doctor(&app).await;
        assert_eq!(code, 0, "{out}\n{err}");
        let local = section(&out, "Acme / local (sandboxd at http://127.0.0.1:");
        for name in ["reachable", "credential present", "credential accepted", "runtimes allowed", "routes present"] {
            assert_eq!(check(&local, name).0, "✓", "{out}");
        }
        assert_eq!(check(&local, "credential present").1, "vault key \"local token\"");
        assert_eq!(check(&local, "runtimes allowed").1, "python, workbench");
        assert!(check(&local, "routes present").1.starts_with("all 19 routes"), "{out}");
        let cloud = section(&out, "Acme / cloud (Daytona at http://127.0.0.1:");
        for name in ["reachable", "credential present", "credential accepted", "snapshot present"] {
            assert_eq!(check(&cloud, name).0, "✓", "{out}");
        }
        assert_eq!(check(&cloud, "snapshot present").1, "\"daytonaio/sandbox:fake\" (Daytona's default)");
        assert!(out.contains("2 connections checked: 2 healthy, 0 unhealthy."), "{out}");
        assert!(!out.contains('✗'), "{out}");
        assert_no_secret(&format!("{out}{err}"), &[&peer.token, &fake.api_key]);
    }
}

db_test! {
    async fn doctor_says_what_is_wrong_with_a_daytona_connection(app: TestApp) {
        let fake = crate::daytona_fake::shared();
        let acme = owner(&app, "ops@example.com", "Acme").await;
        add(&app, &acme, "refused", "daytona", &fake.api_url, Some("not-the-fakes-key")).await;
        let ghost = ConnectionInput {
            name: "ghost".into(),
            kind: "daytona".into(),
            address: fake.api_url.clone(),
            new_key: Some(SecretString::from(fake.api_key.clone())),
            default_runtime: "no-such-snapshot".into(),
            save_anyway: true,
            ..ConnectionInput::default()
        };
        connections::create(&app.state, &acme, ghost).await.expect("ghost");
        let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = closed.local_addr().expect("addr").port();
        drop(closed);
        add(&app, &acme, "down", "daytona", &format!("http://127.0.0.1:{port}/api"), Some("some-key")).await;
        add(&app, &acme, "keyless", "daytona", &fake.api_url, None).await;
        let (code, out, err) = doctor(&app).await;
        assert_eq!(code, 1, "{out}\n{err}");
        let refused = section(&out, "Acme / refused");
        assert_eq!(check(&refused, "reachable").0, "✓", "{out}");
        assert!(check(&refused, "credential accepted").1.starts_with("Key refused"), "{out}");
        assert_eq!(check(&refused, "snapshot present").0, "-", "{out}");
        let ghost = section(&out, "Acme / ghost");
        assert_eq!(check(&ghost, "credential accepted").0, "✓", "{out}");
        let (mark, text) = check(&ghost, "snapshot present");
        assert!(mark == "✗" && text.contains("no-such-snapshot"), "{out}");
        let down = section(&out, "Acme / down");
        let (mark, text) = check(&down, "reachable");
        assert!(mark == "✗" && text.starts_with("Unreachable"), "{out}");
        let keyless = section(&out, "Acme / keyless");
        assert_eq!(check(&keyless, "credential present").0, "✗", "{out}");
        assert_eq!(check(&keyless, "reachable").0, "-", "{out}");
        assert!(out.contains("4 connections checked: 0 healthy, 4 unhealthy."), "{out}");
        assert_no_secret(&format!("{out}{err}"), &[&fake.api_key, "not-the-fakes-key"]);
    }
}

db_test! {
    async fn doctor_names_the_missing_route_and_the_image_on_an_older_host(app: TestApp) {
        let peer = older_peer().await;
        let acme = owner(&app, "ops@example.com", "Acme").await;
        add(&app, &acme, "old host", "sandboxd", &peer.url, Some(&peer.token)).await;
        let (code, out, err) = doctor(&app).await;
        assert_eq!(code, 1, "{out}\n{err}");
        let old = section(&out, "Acme / old host");
        for name in ["reachable", "credential present", "credential accepted", "runtimes allowed"] {
            assert_eq!(check(&old, name).0, "✓", "{out}");
        }
        let (mark, text) = check(&old, "routes present");
        assert_eq!(mark, "✗", "{out}");
        assert!(text.contains("does not serve /workspaces/trees"), "{out}");
        assert!(text.contains("Run ghcr.io/vstorm-co/sandboxd:0.2.37 and redeploy it"), "{out}");
        assert!(out.contains("1 connection checked: 0 healthy, 1 unhealthy."), "{out}");
        assert_no_secret(&format!("{out}{err}"), &[&peer.token]);
    }
}

db_test! {
    async fn a_key_the_host_refuses_makes_doctor_fail(app: TestApp) {
        let peer = peer::shared().await;
        let acme = owner(&app, "ops@example.com", "Acme").await;
        add(&app, &acme, "good", "sandboxd", &peer.url, Some(&peer.token)).await;
        // The same host under its other name: one address is one connection.
        let localhost = format!("http://localhost:{}", peer.port());
        add(&app, &acme, "wrong key", "sandboxd", &localhost, Some("not-the-token-0123456789")).await;
        let (code, out, err) = doctor(&app).await;
        assert_eq!(code, 1, "{out}\n{err}");
        let good = section(&out, "Acme / good");
        assert_eq!(check(&good, "credential accepted").0, "✓", "{out}");
        let wrong = section(&out, "Acme / wrong key");
        assert_eq!(check(&wrong, "reachable").0, "✓", "{out}");
        assert_eq!(check(&wrong, "credential present").0, "✓", "{out}");
        let (mark, text) = check(&wrong, "credential accepted");
        assert_eq!((mark, text), ("✗", "credential refused: the host did not accept this key"), "{out}");
        assert_eq!(check(&wrong, "runtimes allowed").0, "-", "{out}");
        assert_eq!(check(&wrong, "routes present").0, "✓", "{out}");
        assert!(out.contains("2 connections checked: 1 healthy, 1 unhealthy."), "{out}");
        assert_no_secret(&format!("{out}{err}"), &[&peer.token, "not-the-token-0123456789"]);
    }
}

db_test! {
    async fn a_default_runtime_the_host_does_not_offer_makes_doctor_fail(app: TestApp) {
        let peer = peer::shared().await;
        let acme = owner(&app, "ops@example.com", "Acme").await;
        let input = ConnectionInput {
            name: "ghostly".to_owned(),
            kind: "sandboxd".to_owned(),
            address: peer.url.clone(),
            new_key: Some(SecretString::from(peer.token.clone())),
            default_runtime: "ghost".to_owned(),
            save_anyway: true,
            ..ConnectionInput::default()
        };
        connections::create(&app.state, &acme, input).await.expect("create");
        let (code, out, err) = doctor(&app).await;
        assert_eq!(code, 1, "{out}\n{err}");
        let (mark, text) = check(&section(&out, "Acme / ghostly"), "runtimes allowed");
        assert_eq!(mark, "✗", "{out}");
        assert!(text.contains("\"ghost\" is not offered by this host") && text.contains("workbench"), "{text}");
    }
}

db_test! {
    async fn an_unreachable_host_and_a_missing_credential_make_doctor_fail(app: TestApp) {
        let acme = owner(&app, "ops@example.com", "Acme").await;
        let port = free_port().expect("free port");
        add(&app, &acme, "gone", "sandboxd", &format!("http://127.0.0.1:{port}"), None).await;
        let (code, out, err) = doctor(&app).await;
        assert_eq!(code, 1, "{out}\n{err}");
        let gone = section(&out, "Acme / gone");
        assert_eq!(check(&gone, "reachable"), ("✗", "The sandbox service did not answer at this address."), "{out}");
        let (mark, text) = check(&gone, "credential present");
        assert_eq!(mark, "✗", "{out}");
        assert!(text.starts_with("no credential"), "{out}");
        for name in ["credential accepted", "runtimes allowed", "routes present"] {
            assert_eq!(check(&gone, name), ("-", "not checked (the host is not reachable)"), "{out}");
        }
    }
}

db_test! {
    async fn a_credential_the_vault_key_cannot_decrypt_makes_doctor_fail(app: TestApp) {
        let peer = peer::shared().await;
        let acme = owner(&app, "ops@example.com", "Acme").await;
        add(&app, &acme, "local", "sandboxd", &peer.url, Some(&peer.token)).await;
        let other_key = hex::encode([7u8; 32]);
        let (code, out, err) = doctor_with_key(&app, &other_key).await;
        assert_eq!(code, 1, "{out}\n{err}");
        let local = section(&out, "Acme / local");
        let (mark, text) = check(&local, "credential present");
        assert_eq!(mark, "✗", "{out}");
        assert!(text.contains("does not decrypt"), "{out}");
        assert_eq!(check(&local, "credential accepted"), ("-", "not checked (no usable credential)"), "{out}");
        assert_eq!(check(&local, "routes present").0, "✓", "{out}");
        assert_no_secret(&format!("{out}{err}"), &[&peer.token, &other_key]);
    }
}

db_test! {
    async fn doctor_without_connections_says_so_and_passes(app: TestApp) {
        owner(&app, "ops@example.com", "Acme").await;
        let (code, out, err) = doctor(&app).await;
        assert_eq!(code, 0, "{out}\n{err}");
        assert_eq!(out, "No connections are registered; nothing to check.\n");
    }
}

// ---------------------------------------------------------------------------------------------
// sandbox-token

fn env_file_mode(path: &Path) -> u32 {
    std::fs::metadata(path).expect("env file").permissions().mode() & 0o777
}

#[tokio::test]
async fn sandbox_token_writes_a_token_once_and_refuses_to_replace_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("deploy.env");
    let mut command = agenticos(dir.path());
    command.args(["sandbox-token", "--env-file"]).arg(&path);
    let (code, out, err) = run(command).await;
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(env_file_mode(&path), 0o600);
    let text = std::fs::read_to_string(&path).expect("read");
    let token = text.strip_prefix("SANDBOXD_TOKEN=").and_then(|t| t.strip_suffix('\n')).expect("one token line");
    assert!(token.len() >= 43, "{token}");
    assert!(token.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'), "{token}");
    assert!(out.contains(&path.display().to_string()), "{out}");
    assert_no_secret(&format!("{out}{err}"), &[token]);

    let mut again = agenticos(dir.path());
    again.args(["sandbox-token", "--env-file"]).arg(&path);
    let (code, out, err) = run(again).await;
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(err.contains("already sets SANDBOXD_TOKEN"), "{err}");
    assert!(err.contains("orphan every workspace"), "{err}");
    assert_no_secret(&format!("{out}{err}"), &[token]);
    assert_eq!(std::fs::read_to_string(&path).expect("read"), text, "the file is unchanged");
    assert_eq!(env_file_mode(&path), 0o600);
}

#[tokio::test]
async fn sandbox_token_appends_to_the_default_env_file_and_keeps_what_is_there() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(".env");
    std::fs::write(&path, "POSTGRES_PASSWORD=pw\nSANDBOXD_TOKEN=\n").expect("write");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let mut command = agenticos(dir.path());
    command.arg("sandbox-token");
    let (code, out, err) = run(command).await;
    assert_eq!(code, 0, "{out}\n{err}");
    let text = std::fs::read_to_string(&path).expect("read");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert_eq!(lines[0], "POSTGRES_PASSWORD=pw");
    assert!(lines[1].starts_with("SANDBOXD_TOKEN=") && lines[1].len() >= "SANDBOXD_TOKEN=".len() + 43, "{text}");
    assert!(!err.contains("warning"), "{err}");
}

// ---------------------------------------------------------------------------------------------
// sandbox-runtimes

fn shipped_value() -> String {
    RuntimeCatalog::load(repo_root().join(CATALOG_FILE)).expect("the shipped catalog").sandboxd_runtimes_value()
}

/// A repository of the catalog and the compose file, copied.
fn copied_repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("catalog")).expect("mkdir");
    for file in [CATALOG_FILE, VERSION_FILE, "docker-compose.yml"] {
        std::fs::copy(repo_root().join(file), dir.path().join(file)).expect("copy");
    }
    dir
}

async fn runtimes(dir: &Path, args: &[&str], repo: Option<&Path>) -> (i32, String, String) {
    let mut command = agenticos(dir);
    command.arg("sandbox-runtimes").args(args);
    if let Some(repo) = repo {
        command.arg("--repo").arg(repo);
    }
    run(command).await
}

#[tokio::test]
async fn sandbox_runtimes_prints_the_value_the_hosts_need() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut command = agenticos(dir.path());
    command.arg("sandbox-runtimes").env("AGENTICOS_CATALOG_DIR", repo_root().join("catalog"));
    let (code, out, err) = run(command).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, format!("{}\n", shipped_value()));
}

#[tokio::test]
async fn sandbox_runtimes_check_passes_on_the_repository() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (code, out, err) = runtimes(dir.path(), &["--check"], Some(repo_root())).await;
    assert_eq!(code, 0, "{out}\n{err}");
    // Without --repo, the repository is the parent of AGENTICOS_CATALOG_DIR.
    let mut command = agenticos(dir.path());
    command.args(["sandbox-runtimes", "--check"]).env("AGENTICOS_CATALOG_DIR", repo_root().join("catalog"));
    let (code, out, err) = run(command).await;
    assert_eq!(code, 0, "{out}\n{err}");
}

#[tokio::test]
async fn sandbox_runtimes_check_names_a_drifted_file_and_write_fixes_it() {
    let repo = copied_repo();
    let compose: PathBuf = repo.path().join("docker-compose.yml");
    let original = std::fs::read_to_string(&compose).expect("read");
    let drifted = rewrite_compose(&original, r#"{"python":{"image":"python:3.12.11-slim-bookworm"}}"#);
    assert_ne!(drifted, original);
    std::fs::write(&compose, &drifted).expect("write");

    let (code, out, err) = runtimes(repo.path(), &["--check"], Some(repo.path())).await;
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(err.contains(&compose.display().to_string()), "{err}");
    assert!(err.contains("agenticos sandbox-runtimes --write"), "{err}");

    let (code, out, err) = runtimes(repo.path(), &["--write"], Some(repo.path())).await;
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("SANDBOXD_RUNTIMES rewritten"), "{out}");
    assert_eq!(std::fs::read_to_string(&compose).expect("read"), original, "only the value changed back");

    let (code, out, err) = runtimes(repo.path(), &["--check"], Some(repo.path())).await;
    assert_eq!(code, 0, "{out}\n{err}");
    let (code, out, err) = runtimes(repo.path(), &["--write"], Some(repo.path())).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("already up to date"), "{out}");
}

#[tokio::test]
async fn sandbox_runtimes_refuses_conflicting_or_unknown_flags() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (code, _, err) = runtimes(dir.path(), &["--write", "--check"], Some(repo_root())).await;
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("choose one of --write and --check"), "{err}");
    let (code, _, err) = runtimes(dir.path(), &["--frobnicate"], None).await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("unknown argument `--frobnicate`"), "{err}");
}

#[tokio::test]
async fn sandbox_runtimes_write_changes_nothing_when_a_compose_file_cannot_be_fixed() {
    let repo = copied_repo();
    let compose = repo.path().join("docker-compose.yml");
    let drifted = rewrite_compose(&std::fs::read_to_string(&compose).expect("read"), "{}");
    std::fs::write(&compose, &drifted).expect("write");
    let other = repo.path().join("compose.yaml");
    std::fs::write(&other, "services:\n  sandboxd:\n    environment:\n      SANDBOXD_TOKEN: x\n").expect("write");

    let (code, out, err) = runtimes(repo.path(), &["--write"], Some(repo.path())).await;
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(err.contains(&other.display().to_string()) && err.contains("sets no SANDBOXD_RUNTIMES"), "{err}");
    assert_eq!(std::fs::read_to_string(&compose).expect("read"), drifted, "no file was written");
    let (code, _, err) = runtimes(repo.path(), &["--check"], Some(repo.path())).await;
    assert_eq!(code, 1, "{err}");
    assert!(err.contains(&compose.display().to_string()) && err.contains(&other.display().to_string()), "{err}");
}
