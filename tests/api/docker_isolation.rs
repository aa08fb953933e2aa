//! Isolation of a run's workspace in a real sandbox container, through our API (a run's
//! workspace exec) against the pinned sandboxd image run with the engine's socket
//! ([`DockerPeer`]), each on SQLite and PostgreSQL: no network, the catalog entry's memory
//! ceiling and the service's process ceiling enforced by the kernel, and a container removed
//! from outside healed with its files (docs/design.md §7).

use reqwest::Method;
use serde_json::{json, Value};

use crate::db_test;
use crate::docker_peer::DockerPeer;
use crate::docker_support::{self, docker, outward_address};
use crate::helpers::Resp;
use crate::support::Org;

/// The Docker peer for `test`, or `None` (SKIPPED) without an engine outside CI.
async fn docker_peer(test: &str) -> Option<DockerPeer> {
    let images = docker_support::images(test).await?;
    Some(DockerPeer::start(&images, &[]).await.unwrap_or_else(|e| panic!("{e:#}")))
}

/// Registers `peer` as the org's connection.
async fn connect(o: &Org<'_>, peer: &DockerPeer) {
    let body = json!({"name": format!("docker-{}", peer.port()), "address": peer.url, "new_key": peer.token});
    let r = o.call(Method::POST, "/api/v1/sandbox-connections", Some(body)).await;
    assert_eq!(r.status, 201, "{}", r.body);
}

/// A run of a `runtime` agent with `scope`, on `peer`.
async fn run_on(o: &Org<'_>, peer: &DockerPeer, runtime: &str, scope: &str) -> String {
    connect(o, peer).await;
    let agent = o.agent(json!({"name": runtime, "backend": "service", "scope": scope, "runtime": runtime})).await;
    let conv = o.conversation(&agent, json!({})).await;
    o.run(&agent, Some(&conv), json!({})).await
}

/// Runs `command` in `run`'s workspace; the answer must be a 200 result.
async fn exec(o: &Org<'_>, run: &str, command: &str) -> Value {
    let r: Resp = o.exec(run, command).await;
    assert_eq!(r.status, 200, "{command}: {}", r.body);
    r.json()
}

/// The container `run`'s session lives in (it exists once the run touched its workspace).
async fn container_of(o: &Org<'_>, run: &str) -> String {
    let state = o.ws(run, Method::GET, "state", None).await.json();
    let key = state["session_key"].as_str().unwrap_or_else(|| panic!("no session key: {state}"));
    DockerPeer::session_container(key)
}

/// `docker inspect --format <format> <container>`
fn inspect(container: &str, format: &str) -> String {
    docker(&["inspect", "--format", format, container]).unwrap_or_else(|e| panic!("{e:#}"))
}

/// The runtime's effective ceilings as the host reports them (`GET /policy`).
async fn policy_of(peer: &DockerPeer, alias: &str) -> Value {
    let policy = peer.get("/policy").await;
    policy["runtimes"]
        .as_array()
        .and_then(|all| all.iter().find(|r| r["alias"] == alias).cloned())
        .unwrap_or_else(|| panic!("no runtime {alias} in {policy}"))
}

db_test! {
    async fn a_sandbox_without_network_cannot_open_a_socket_to_the_outside(app: TestApp) {
        let Some(peer) = docker_peer("docker_isolation::network").await else { return };
        let o = Org::new(&app).await;
        let run = run_on(&o, &peer, "python", "run").await;
        // A listener on every address of this machine, which a container on a network would
        // reach at the machine's own address.
        let listener = std::net::TcpListener::bind(("0.0.0.0", 0)).expect("listener");
        let port = listener.local_addr().expect("addr").port();
        let gateway = outward_address();
        let script = format!(
            "import socket\n\
             for host in ({gateway:?}, '1.1.1.1'):\n\
             \x20   try:\n\
             \x20       socket.create_connection((host, {port}), timeout=5)\n\
             \x20       print(host, 'connected')\n\
             \x20   except OSError as e:\n\
             \x20       print(host, 'errno', e.errno)\n",
        );
        assert_eq!(o.write(&run, "probe.py", &script).await.status, 204);
        let out = exec(&o, &run, "python3 probe.py; ls /sys/class/net").await;
        let stdout = out["stdout"].as_str().unwrap_or_default();
        // 101 is ENETUNREACH: no route at all, not a refusal or a timeout.
        assert_eq!(stdout, format!("{gateway} errno 101\n1.1.1.1 errno 101\nlo\n"), "{out}");
        assert_eq!(out["exit_code"], 0, "{out}");
        let container = container_of(&o, &run).await;
        assert_eq!(inspect(&container, "{{.HostConfig.NetworkMode}}"), "none");
        assert_eq!(policy_of(&peer, "python").await["network_mode"], "none");
    }
}

/// The catalog entry's `mem_limit` in bytes (`1g` -> 1073741824).
fn catalog_mem_limit(alias: &str) -> u64 {
    let path = std::path::Path::new(crate::helpers::TEST_CATALOG_DIR).join("sandbox_runtimes.json");
    let catalog: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(path).expect("catalog")).expect("json");
    let entry = catalog.iter().find(|e| e["alias"] == alias).expect("entry");
    let text = entry["mem_limit"].as_str().expect("mem_limit");
    let (digits, unit) = text.split_at(text.len() - 1);
    let shift = match unit {
        "g" => 30,
        "m" => 20,
        other => panic!("unit {other}"),
    };
    digits.parse::<u64>().expect("number") << shift
}

db_test! {
    async fn the_catalog_memory_ceiling_kills_a_command_that_exceeds_it(app: TestApp) {
        let Some(peer) = docker_peer("docker_isolation::memory").await else { return };
        let o = Org::new(&app).await;
        let run = run_on(&o, &peer, "python", "run").await;
        let limit = catalog_mem_limit("python");
        assert_eq!(exec(&o, &run, "echo ready").await["stdout"], "ready\n");
        let container = container_of(&o, &run).await;
        // The engine's ceiling, swap pinned to it, and the kernel's own value inside.
        assert_eq!(inspect(&container, "{{.HostConfig.Memory}}"), limit.to_string());
        assert_eq!(inspect(&container, "{{.HostConfig.MemorySwap}}"), limit.to_string());
        let cgroup = exec(&o, &run, "cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max").await;
        assert_eq!(cgroup["stdout"], format!("{limit}\n"), "{cgroup}");
        // Half a gigabyte over the ceiling, every page written: the kernel kills it (SIGKILL).
        let over = limit + (512 << 20);
        let out = exec(&o, &run, &format!("python3 -c 'b = b\"x\" * {over}; print(len(b))'")).await;
        assert_eq!(out["exit_code"], 137, "{out}");
        assert_eq!(out["stdout"], "", "{out}");
        let oom = inspect(&container, "{{.State.OOMKilled}}");
        // Only the command died: the sandbox still answers, below its ceiling.
        let under = limit / 4;
        let ok = exec(&o, &run, &format!("python3 -c 'b = b\"x\" * {under}; print(len(b))'")).await;
        assert_eq!(ok["stdout"], format!("{under}\n"), "{ok} (OOMKilled was {oom})");
        assert_eq!(inspect(&container, "{{.State.Status}}"), "running");
    }
}

db_test! {
    async fn the_process_ceiling_stops_a_command_from_forking_past_it(app: TestApp) {
        let Some(peer) = docker_peer("docker_isolation::pids").await else { return };
        let o = Org::new(&app).await;
        let run = run_on(&o, &peer, "python", "run").await;
        let ceiling = policy_of(&peer, "python").await["pids_limit"].as_u64().expect("pids_limit");
        assert_eq!(exec(&o, &run, "echo ready").await["stdout"], "ready\n");
        let container = container_of(&o, &run).await;
        assert_eq!(inspect(&container, "{{.HostConfig.PidsLimit}}"), ceiling.to_string());
        let cgroup = exec(&o, &run, "cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids.max").await;
        assert_eq!(cgroup["stdout"], format!("{ceiling}\n"), "{cgroup}");
        // Threads count against the ceiling too: start them until the kernel refuses one.
        let script = format!(
            "import threading, time\n\
             stop = threading.Event()\n\
             started = 0\n\
             try:\n\
             \x20   for _ in range({}):\n\
             \x20       threading.Thread(target=stop.wait, daemon=True).start()\n\
             \x20       started += 1\n\
             except RuntimeError as e:\n\
             \x20   print('refused after', started, e)\n\
             else:\n\
             \x20   print('all', started, 'started')\n\
             stop.set()\n",
            ceiling * 2
        );
        assert_eq!(o.write(&run, "threads.py", &script).await.status, 204);
        let out = exec(&o, &run, "python3 threads.py").await;
        let stdout = out["stdout"].as_str().unwrap_or_default();
        let started: u64 = stdout
            .strip_prefix("refused after ")
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("the ceiling did not stop it: {out}"));
        assert!(started > 0 && started < ceiling, "{started} threads under a ceiling of {ceiling}: {out}");
        assert!(stdout.contains("can't start new thread"), "{out}");
        // The processes are gone with the command: the sandbox forks again.
        assert_eq!(exec(&o, &run, "echo after").await["stdout"], "after\n");
    }
}

db_test! {
    async fn a_container_removed_from_outside_is_reported_lost_and_the_next_turn_gets_a_new_one(app: TestApp) {
        let Some(peer) = docker_peer("docker_isolation::removed").await else { return };
        let o = Org::new(&app).await;
        connect(&o, &peer).await;
        let agent = o.agent(json!({"name": "keeper", "backend": "service", "scope": "conversation", "runtime": "python"})).await;
        let conv = o.conversation(&agent, json!({})).await;
        let run = o.run(&agent, Some(&conv), json!({})).await;
        assert_eq!(o.write(&run, "kept.txt", "still here").await.status, 204);
        assert_eq!(exec(&o, &run, "cat kept.txt").await["stdout"], "still here");
        let container = container_of(&o, &run).await;
        let id = inspect(&container, "{{.Id}}");
        docker(&["rm", "-f", &container]).expect("docker rm -f");

        // sandboxd answers 410 "gone, and its files with it": the run is told its workspace is
        // lost, never handed a silently empty one, for the rest of the run.
        let p = o.exec(&run, "cat kept.txt").await.problem(410);
        assert!(p["detail"].as_str().is_some_and(|d| d.contains("files are gone")), "{p}");
        assert_eq!(o.ws(&run, Method::GET, "state", None).await.json()["state"], "lost");
        o.write(&run, "new.txt", "x").await.problem(410);
        assert!(docker(&["inspect", &container]).is_err(), "a container came back during the lost run");
        o.finish(&run).await;

        // The next turn opens the session by name again: a new container. (Its files: sandboxd
        // keeps the workspace directory on disk, so `kept.txt` is there again, although the lost
        // run was told the next turn starts fresh; not asserted, see the README.)
        let next = o.run(&agent, Some(&conv), json!({})).await;
        let out = exec(&o, &next, "echo fresh; ls").await;
        assert_eq!(out["exit_code"], 0, "{out}");
        assert!(out["stdout"].as_str().is_some_and(|s| s.starts_with("fresh\n")), "{out}");
        assert_eq!(container_of(&o, &next).await, container, "the session key is the conversation's");
        assert_ne!(inspect(&container, "{{.Id}}"), id, "no new container");
        assert_eq!(o.ws(&next, Method::GET, "state", None).await.json()["state"], "open");
    }
}
