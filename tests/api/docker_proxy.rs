//! The Docker proxy (`agenticos docker-proxy`, docs/operating.md "The Docker proxy") as its own
//! process in front of the real engine: the console's discovery, doctor and live usage work
//! through it (over TCP and over a Unix socket), a container's environment does not pass it, and
//! every write — create, start, exec, delete through the docker CLI itself, any POST, a hijack, a
//! path-traversal — is refused with 403 and never reaches the engine.

use std::process::Stdio;

use reqwest::{Method, StatusCode};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _};

use crate::docker_engine::{container, doctor, pin};
use crate::docker_engine_fixture::{DockerRun, SOCKET};
use crate::docker_support::docker;
use crate::helpers::{spawn_app_with, Backend};

/// A running proxy process (killed when dropped) and the address it printed.
struct Proxy {
    _child: tokio::process::Child,
    /// `tcp://127.0.0.1:<port>` or `unix:///…`
    address: String,
}

async fn start_proxy(listen: &str) -> Proxy {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_agenticos"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("AGENTICOS_LOG", "warn")
        .args(["docker-proxy", "--listen", listen, "--engine", SOCKET])
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the proxy starts");
    let mut lines = tokio::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
    let line = lines.next_line().await.expect("read").expect("the proxy said where it serves");
    // `docker-proxy is serving on <tcp://host:port | unix:///path>: …`
    let address = line
        .strip_prefix("docker-proxy is serving on ")
        .and_then(|rest| rest.split_once(": "))
        .map(|(address, _)| address.to_string())
        .unwrap_or_else(|| panic!("not the serving line: {line}"));
    Proxy { _child: child, address }
}

/// `docker -H <proxy> ARGS…`: whether it succeeded, and what it printed.
fn docker_through(proxy: &Proxy, args: &[&str]) -> (bool, String) {
    let out = std::process::Command::new("docker").arg("-H").arg(&proxy.address).args(args).output().expect("docker");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

/// One raw HTTP/1.1 request, bytes as given (no client normalises the path); status and answer.
async fn raw(proxy: &Proxy, request: &str) -> (u16, String) {
    let address = proxy.address.strip_prefix("tcp://").expect("a TCP proxy");
    let mut stream = tokio::net::TcpStream::connect(address).await.expect("connect");
    stream.write_all(request.as_bytes()).await.expect("send");
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.expect("read");
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let status = answer.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, answer)
}

async fn reads_pass(backend: Backend) {
    let pin = pin();
    let Some(mut run) = DockerRun::start(&[&pin]) else { return };
    let run_id = run.id.clone();
    let (good, good_port) = run.httpd(&pin, "proxied");
    let session = format!("sandboxd-{}-s1", run.id);
    run.sleeper(&pin, &session);
    let tcp = start_proxy("127.0.0.1:0").await;
    let sockets = tempfile::tempdir().expect("tempdir");
    let unix = start_proxy(&sockets.path().join("docker.sock").display().to_string()).await;
    let Some(app) =
        spawn_app_with(backend, &[("DOCKER_HOST", &tcp.address), ("AGENTICOS_SANDBOXD_IMAGE", &run.image_name)]).await
    else {
        return;
    };
    app.setup_owner().await;

    // Discovery, through the TCP proxy.
    let r = app.web.api(Method::GET, "/api/v1/sandbox-connections/discovered", None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let answer: Value = serde_json::from_str(&r.body).expect("json");
    assert!(answer["engine_problem"].is_null(), "{answer:#}");
    let g = container(&answer, &good);
    assert_eq!(
        (g["version"].as_str(), g["address"].as_str()),
        (Some("matches"), Some(&*format!("http://127.0.0.1:{good_port}")))
    );

    // Doctor, through the Unix socket proxy.
    let socket = unix.address.strip_prefix("unix://").expect("a socket path");
    let (code, out) =
        doctor(&app, &[("AGENTICOS_DOCKER_SOCKET", socket), ("AGENTICOS_SANDBOXD_IMAGE", &run.image_name)]).await;
    assert_eq!(code, 0, "{out}");
    assert!(out.contains(&format!("  {good} (running")), "{out}");
    assert!(out.contains(&format!("✓ image tag          {pin} is the pinned version")), "{out}");
    assert!(out.contains("- restarts           0"), "{out}");

    // Live usage, through the TCP proxy.
    let engine = agenticos::docker::Engine::connect(&tcp.address).expect("engine");
    let usage = engine.usage_of_all(vec![session.clone()]).await;
    let u = usage.get(&session).unwrap_or_else(|| panic!("no usage of {session} through the proxy: {usage:?}"));
    assert_eq!(u.memory_limit_bytes, Some(64 * 1024 * 1024), "{u:?}");

    // The docker CLI reads through it too, and an inspection carries no environment.
    let (ok, listed) = docker_through(&tcp, &["ps", "--filter", &format!("name={good}"), "--format", "{{.Names}}"]);
    assert!(ok && listed.trim() == good, "{listed}");
    let (ok, inspected) = docker_through(&tcp, &["inspect", &good]);
    assert!(ok, "{inspected}");
    assert!(!inspected.contains(&run.env_secret), "a container's environment passed the proxy: {inspected}");
    let direct = docker(&["inspect", &good]).expect("inspect");
    assert!(direct.contains(&run.env_secret), "the engine itself has it (the test would prove nothing)");

    drop(run);
    assert_eq!(DockerRun::leftovers(&run_id), Vec::<String>::new(), "the run left objects behind");
    if let Some(db) = app.database.clone() {
        crate::helpers::drop_database(Some(db)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_doctor_and_stats_work_through_the_proxy_sqlite() {
    reads_pass(Backend::Sqlite).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_doctor_and_stats_work_through_the_proxy_postgres() {
    reads_pass(Backend::Postgres).await
}

fn state_of(name: &str) -> String {
    docker(&["inspect", "--format", "{{.State.Status}}", name]).unwrap_or_else(|e| format!("{e:#}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_start_exec_delete_and_any_post_hijack_or_traversal_are_refused() {
    let pin = pin();
    let Some(mut run) = DockerRun::start(&[&pin]) else { return };
    let run_id = run.id.clone();
    let running = format!("{}-running", run.id);
    run.sleeper(&pin, &running);
    let stopped = format!("{}-stopped", run.id);
    run.sleeper(&pin, &stopped);
    docker(&["stop", "--time", "0", &stopped]).expect("stop");
    let proxy = start_proxy("127.0.0.1:0").await;
    let refused = |what: &str, (ok, out): (bool, String)| {
        assert!(!ok, "{what} passed the proxy: {out}");
        assert!(out.contains("agenticos docker-proxy") && out.contains("is refused"), "{what}: {out}");
    };

    // The docker CLI's own writes.
    let never = format!("{}-never", run.id);
    let image = format!("{}:{pin}", run.image_name);
    refused("create", docker_through(&proxy, &["create", "--name", &never, &image, "/bin/busybox", "true"]));
    refused("start", docker_through(&proxy, &["start", &stopped]));
    refused("exec", docker_through(&proxy, &["exec", &running, "/bin/busybox", "id"]));
    refused("delete", docker_through(&proxy, &["rm", "--force", &running]));
    refused("stop", docker_through(&proxy, &["stop", &running]));
    // None of it reached the engine.
    assert_eq!(docker(&["ps", "-a", "--filter", &format!("name={never}"), "-q"]).expect("ps"), "");
    assert_eq!((state_of(&running).as_str(), state_of(&stopped).as_str()), ("running", "exited"));

    // A POST to any path, a path-traversal to a write, hijacks: 403 with the engine's error shape.
    for request in [
        "POST /v1.41/containers/json HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_string(),
        "GET /v1.41/containers/json/../create HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".to_string(),
        "POST /containers/json/../create HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}".to_string(),
        "GET /v1.41/containers/%2e%2e/create HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".to_string(),
        format!(
            "POST /v1.41/containers/{running}/attach?stream=1&stdout=1 HTTP/1.1\r\nHost: x\r\nUpgrade: tcp\r\nConnection: Upgrade\r\n\r\n"
        ),
        "GET /v1.41/containers/json HTTP/1.1\r\nHost: x\r\nUpgrade: tcp\r\nConnection: Upgrade\r\n\r\n".to_string(),
        "GET /v1.41/containers/json HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}".to_string(),
    ] {
        let (status, answer) = raw(&proxy, &request).await;
        let first = request.lines().next().unwrap_or_default();
        assert_eq!(status, 403, "{first}: {answer}");
        assert!(answer.contains("{\"message\":\"agenticos docker-proxy: ") && answer.contains("is refused"), "{first}: {answer}");
    }
    assert_eq!(state_of(&running), "running");
    // The same connection still reads: a refusal is an answer, not a crash.
    let (status, answer) =
        raw(&proxy, "GET /v1.41/containers/json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").await;
    assert_eq!(status, 200, "{answer}");
    assert!(answer.contains(&running), "{answer}");
    drop(run);
    assert_eq!(DockerRun::leftovers(&run_id), Vec::<String>::new(), "the run left objects behind");
}
