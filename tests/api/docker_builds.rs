//! A runtime the host builds on first use (as the catalog's `workbench` is), against the pinned
//! sandboxd image run with the engine's socket, each on SQLite and PostgreSQL: while the image
//! builds, the run's workspace reads `preparing` and the conversation page says "The sandbox is
//! being prepared"; then the command runs in a container of the built image.

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::json;

use crate::db_test;
use crate::docker_peer::DockerPeer;
use crate::docker_support::{self, docker, BUILT_IMAGE_REPOSITORY, BUILT_IMAGE_RUN_ENV};
use crate::support::Org;

/// How long the build may take before the test gives up on seeing it finish.
const BUILD_TIMEOUT: Duration = Duration::from_secs(600);

db_test! {
    async fn a_runtime_being_built_shows_the_sandbox_is_being_prepared(app: TestApp) {
        let Some(images) = docker_support::images("docker_builds::preparing").await else { return };
        // `workbench` built on the local base with one apt package. The run in its name and its
        // environment makes the image this run's: built fresh, removed with the peer, and not
        // pruned by another run's sandboxd (after a build sandboxd removes every other image
        // tagged `<runtime name>-*` on the engine).
        let runtimes = json!({
            "workbench": {
                "runtime": {
                    "name": "workbench-{run}",
                    "base_image": images.base,
                    "setup_commands": ["apt-get update && apt-get install -y --no-install-recommends jq && rm -rf /var/lib/apt/lists/*"],
                    "env_vars": {BUILT_IMAGE_RUN_ENV: "{run}"},
                },
                "description": "built on first use",
                "mem_limit": "2g",
                "network_mode": "none",
            },
            "python": {"image": images.python, "mem_limit": "1g", "network_mode": "none"},
        })
        .to_string();
        let peer = DockerPeer::start(&images, &[("SANDBOXD_RUNTIMES", &runtimes)]).await.unwrap_or_else(|e| panic!("{e:#}"));
        let o = Org::new(&app).await;
        let body = json!({"name": "docker", "address": peer.url, "new_key": peer.token});
        assert_eq!(o.call(Method::POST, "/api/v1/sandbox-connections", Some(body)).await.status, 201);
        let agent = o.agent(json!({"name": "builder", "backend": "service", "scope": "conversation", "runtime": "workbench"})).await;
        let conv = o.conversation(&agent, json!({})).await;
        let run = o.run(&agent, Some(&conv), json!({})).await;

        // The first operation opens the session, which waits on the build.
        let url = app.web.url(&format!("/api/v1/runs/{run}/workspace/exec"));
        let exec = tokio::spawn(
            reqwest::Client::new().post(url).bearer_auth(&o.token).json(&json!({"command": "jq --version"})).send(),
        );
        let deadline = Instant::now() + BUILD_TIMEOUT;
        loop {
            let state = o.ws(&run, Method::GET, "state", None).await.json();
            if state["state"] == "preparing" {
                break;
            }
            assert!(!exec.is_finished(), "the command finished before the workspace read preparing: {state}");
            assert!(Instant::now() < deadline, "never preparing: {state}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let page = app.web.get(&format!("/conversations/{conv}")).await;
        let alert = page.select_text("#conversation-workspace .alert-info").unwrap_or_else(|| panic!("no alert: {}", page.body));
        assert!(alert.contains("The sandbox is being prepared"), "{alert}");

        let answer = exec.await.expect("exec task").expect("exec request");
        assert_eq!(answer.status(), 200);
        let out: serde_json::Value = answer.json().await.expect("json");
        assert_eq!(out["exit_code"], 0, "{out}");
        assert!(out["stdout"].as_str().is_some_and(|s| s.starts_with("jq-")), "{out}");
        assert_eq!(o.ws(&run, Method::GET, "state", None).await.json()["state"], "open");
        let page = app.web.get(&format!("/conversations/{conv}")).await;
        assert!(!page.body.contains("The sandbox is being prepared"), "still preparing after the build");
        // The session runs in a container of the image built for this run.
        let key = o.ws(&run, Method::GET, "state", None).await.json()["session_key"].as_str().expect("key").to_string();
        let image = docker(&["inspect", "--format", "{{.Config.Image}}", &DockerPeer::session_container(&key)]).expect("inspect");
        assert!(image.starts_with(&format!("{BUILT_IMAGE_REPOSITORY}:workbench-{}-", peer.run)), "{image}");
        let env = docker(&["image", "inspect", "--format", "{{range .Config.Env}}{{println .}}{{end}}", &image]).expect("env");
        assert!(env.lines().any(|l| l == format!("{BUILT_IMAGE_RUN_ENV}={}", peer.run)), "{env}");
    }
}
