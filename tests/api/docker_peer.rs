#![allow(dead_code)]
//! The second peer mode: the pinned sandboxd image (built here, see
//! `tests/docker-images/build.sh`) run as a container with the engine's socket, so its sessions
//! are real containers with real ceilings.
//!
//! The service is published on 127.0.0.1 only, on a random port; the catalog's `workbench` and
//! `python` runtimes point at the reduced local images, keep the catalog's memory ceilings and
//! run with `network_mode none` (test containers never get a network). The container carries
//! [`LABEL`] and the run label; the session containers it starts are recognised by their name
//! prefix and their bind mounts under the run's directory. Dropping the peer removes all of
//! them (also when the test panicked: then the service's log is kept in the run's directory);
//! what a killed test process leaves behind is swept when the next Docker peer starts.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use serde_json::{json, Map, Value};

use crate::docker_support::{self, docker, Images, LABEL, RUN_LABEL, SANDBOX_UID};

/// How long the service gets to answer `/healthz` after its container started.
const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// A sandboxd container and everything it started.
#[derive(Debug)]
pub struct DockerPeer {
    /// `http://127.0.0.1:<published port>`
    pub url: String,
    /// The service token.
    pub token: String,
    /// The test run: the value of the run label, and the directory under `RUNS_DIR`.
    pub run: String,
    /// The container's name.
    pub container: String,
    /// `SANDBOXD_WORKSPACE_ROOT`, the same path on the host and in the container.
    pub workspace_root: PathBuf,
}

impl DockerPeer {
    /// Sweeps what finished runs left, then starts the sandboxd image with `env` over the
    /// defaults (`{run}` in a value is replaced by the run) and waits until `/healthz` answers.
    pub async fn start(images: &Images, env: &[(&str, &str)]) -> anyhow::Result<DockerPeer> {
        Self::start_with(images, env, false).await
    }

    /// [`DockerPeer::start`] as the deployment runs it: the service itself as uid
    /// [`SANDBOX_UID`] (in the engine socket's group), with `SANDBOXD_SANDBOX_UID` set to it, and
    /// a workspace root that uid owns (docs/design.md §14, "Isolation, plainly").
    pub async fn start_unprivileged(images: &Images, env: &[(&str, &str)]) -> anyhow::Result<DockerPeer> {
        Self::start_with(images, env, true).await
    }

    async fn start_with(images: &Images, env: &[(&str, &str)], unprivileged: bool) -> anyhow::Result<DockerPeer> {
        docker_support::sweep_abandoned();
        let run = docker_support::new_run_id();
        let dir = docker_support::run_dir(&run);
        let workspace_root = dir.join("workspaces");
        std::fs::create_dir_all(&workspace_root).context("creating the workspace root")?;
        let token = format!("docker-peer-{}", uuid::Uuid::new_v4().simple());
        let container = format!("agenticos-test-sandboxd-{run}");
        let root = workspace_root.to_string_lossy().to_string();
        let runtimes = runtimes_value(images)?;
        let mut args: Vec<String> = [
            "run",
            "--detach",
            "--name",
            &container,
            "--label",
            LABEL,
            "--label",
            &format!("{RUN_LABEL}={run}"),
            "--publish",
            "127.0.0.1::8080",
            "--volume",
            "/var/run/docker.sock:/var/run/docker.sock",
            "--volume",
            &format!("{root}:{root}"),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let uid = SANDBOX_UID.to_string();
        if unprivileged {
            std::os::unix::fs::chown(&workspace_root, Some(SANDBOX_UID), Some(SANDBOX_UID))
                .context("giving the workspace root to the sandbox uid")?;
            args.extend(["--user".into(), format!("{uid}:{uid}"), "--group-add".into(), docker_support::socket_gid()?]);
        }
        let mut environment: Vec<(String, String)> = vec![
            ("SANDBOXD_TOKEN".into(), token.clone()),
            ("SANDBOXD_UI_ENABLED".into(), "0".into()),
            ("SANDBOXD_NETWORK_MODE".into(), "none".into()),
            ("SANDBOXD_PERSIST_CONTAINERS".into(), "true".into()),
            ("SANDBOXD_WORKSPACE_ROOT".into(), root.clone()),
            ("SANDBOXD_RUNTIMES".into(), runtimes),
        ];
        if unprivileged {
            environment.push(("SANDBOXD_SANDBOX_UID".into(), uid));
        }
        environment.retain(|(name, _)| !env.iter().any(|(n, _)| n == name));
        environment.extend(env.iter().map(|(k, v)| (k.to_string(), v.replace("{run}", &run))));
        for (name, value) in environment {
            args.push("--env".into());
            args.push(format!("{name}={value}"));
        }
        args.push(images.sandboxd.clone());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        // From here on a failure still removes the container (Drop).
        let mut peer = DockerPeer { url: String::new(), token, run, container, workspace_root };
        docker(&args).context("starting the sandboxd container")?;
        let port = docker(&["port", &peer.container, "8080/tcp"])?;
        let port = port.lines().find_map(|l| l.strip_prefix("127.0.0.1:")).context("no port published on 127.0.0.1")?;
        peer.url = format!("http://127.0.0.1:{port}");
        peer.wait_ready().await.with_context(|| format!("sandboxd container did not answer:\n{}", peer.logs()))?;
        Ok(peer)
    }

    async fn wait_ready(&self) -> anyhow::Result<()> {
        let http = reqwest::Client::builder().timeout(Duration::from_secs(2)).build()?;
        let deadline = Instant::now() + READY_TIMEOUT;
        let mut pause = Duration::from_millis(50);
        loop {
            if let Ok(r) = http.get(format!("{}/healthz", self.url)).send().await {
                if r.status().is_success() {
                    return Ok(());
                }
            }
            let state = docker(&["inspect", "--format", "{{.State.Status}}", &self.container])?;
            if state != "running" {
                bail!("the container is {state}");
            }
            if Instant::now() >= deadline {
                bail!("/healthz did not answer within {READY_TIMEOUT:?}");
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(500));
        }
    }

    /// The port sandboxd is published on (127.0.0.1 only).
    pub fn port(&self) -> u16 {
        self.url.rsplit(':').next().and_then(|p| p.parse().ok()).unwrap_or_default()
    }

    /// The service's own output.
    pub fn logs(&self) -> String {
        match std::process::Command::new("docker").args(["logs", "--tail", "60", &self.container]).output() {
            Ok(out) => format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)),
            Err(error) => format!("(no logs: {error})"),
        }
    }

    /// `GET path` on the service with its token, as JSON.
    pub async fn get(&self, path: &str) -> Value {
        let r = reqwest::Client::new()
            .get(format!("{}{path}", self.url))
            .header("X-Sandbox-Token", &self.token)
            .send()
            .await
            .expect("sandboxd request");
        r.json().await.expect("sandboxd json")
    }

    /// The container a session runs in (sandboxd names it after the session).
    pub fn session_container(session_id: &str) -> String {
        format!("{}{session_id}", docker_support::SESSION_CONTAINER_PREFIX)
    }
}

impl Drop for DockerPeer {
    fn drop(&mut self) {
        let dir = docker_support::run_dir(&self.run);
        if std::thread::panicking() {
            let _ = std::fs::write(dir.join("sandboxd.log"), self.logs());
            let _ = std::fs::write(dir.join("KEPT"), "its test panicked");
            eprintln!("docker peer: kept {} (sandboxd.log has the service's output)", dir.display());
        }
        let removed = docker_support::remove_containers(Some(&self.run));
        if !removed.iter().any(|n| n == &self.container) {
            let _ = docker(&["rm", "-f", "-v", &self.container]);
        }
        docker_support::remove_built_images(Some(&self.run));
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}

/// `SANDBOXD_RUNTIMES` for the test peer (and the compose stack's sandboxd): the test catalog's
/// aliases, descriptions and memory ceilings, on the reduced local images, every one with
/// `network_mode none`.
pub fn runtimes_value(images: &Images) -> anyhow::Result<String> {
    let path = PathBuf::from(crate::helpers::TEST_CATALOG_DIR).join("sandbox_runtimes.json");
    let catalog: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(&path)?)?;
    let mut runtimes = Map::new();
    for entry in catalog {
        let alias = entry["alias"].as_str().context("an entry without alias")?;
        let image = match alias {
            "python" => &images.python,
            "workbench" => &images.workbench,
            other => bail!("no local image for the catalog's runtime {other}"),
        };
        runtimes.insert(
            alias.to_string(),
            json!({
                "image": image,
                "description": entry["description"],
                "mem_limit": entry["mem_limit"],
                "network_mode": "none",
            }),
        );
    }
    Ok(Value::Object(runtimes).to_string())
}
