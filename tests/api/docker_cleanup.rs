//! No container of a Docker test run is left behind: dropping the Docker peer removes the
//! sandboxd container and the session containers it started (no database is involved), and a
//! run whose process is gone is swept by the next one.

use serde_json::json;

use crate::docker_peer::DockerPeer;
use crate::docker_support::{self, docker, LABEL, RUN_LABEL};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_docker_peer_removes_its_containers_and_directory() {
    let Some(images) = docker_support::images("docker_cleanup::drop").await else { return };
    let peer = DockerPeer::start(&images, &[]).await.unwrap_or_else(|e| panic!("{e:#}"));
    let http = reqwest::Client::new();
    let opened: serde_json::Value = http
        .post(format!("{}/sessions", peer.url))
        .header("X-Sandbox-Token", &peer.token)
        .json(&json!({"session_id": "cleanup-1", "runtime": "python"}))
        .send()
        .await
        .expect("open")
        .json()
        .await
        .expect("json");
    assert_eq!(opened["session"]["alive"], true, "{opened}");
    let run = peer.run.clone();
    let mut containers = docker_support::containers_of(&run);
    containers.sort();
    assert_eq!(containers, vec![peer.container.clone(), DockerPeer::session_container("cleanup-1")]);

    drop(peer);
    assert_eq!(docker_support::containers_of(&run), Vec::<String>::new());
    assert!(!docker_support::run_dir(&run).exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_containers_of_a_run_whose_process_is_gone_are_swept() {
    let Some(images) = docker_support::images("docker_cleanup::sweep").await else { return };
    // A run id whose process cannot exist (above the kernel's largest pid).
    let run = format!("4999999999-{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    let name = format!("agenticos-test-left-{run}");
    docker(&[
        "run",
        "--detach",
        "--network",
        "none",
        "--name",
        &name,
        "--label",
        LABEL,
        "--label",
        &format!("{RUN_LABEL}={run}"),
        &images.base,
        "sleep",
        "600",
    ])
    .expect("a left-over container");
    assert_eq!(docker_support::containers_of(&run), vec![name.clone()]);

    docker_support::sweep_abandoned();
    assert_eq!(docker_support::containers_of(&run), Vec::<String>::new());
}
