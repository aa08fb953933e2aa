//! Sandboxes run as uid 10001 (docs/design.md §14, "Isolation, plainly"): sandboxd itself runs as
//! that uid (opening a session chowns its workspace, which an unprivileged sandboxd can do only for
//! itself), the runtime builder creates the account with a home, every file an agent writes
//! belongs to 10001 on the host, and LibreOffice converts a document there (it needs a real
//! account with a writable home). Through our API against the pinned sandboxd image run as the
//! deployment runs it ([`DockerPeer::start_unprivileged`]), each on SQLite and PostgreSQL.
//!
//! The runtime is a small stand-in for the shipped `workbench`: built by sandboxd on the local
//! `workbench` test image (command-line tools and LibreOffice Writer, see
//! `tests/docker-images/workbench/Dockerfile`) instead of the full catalog build.

use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use reqwest::Method;
use serde_json::{json, Value};

use crate::db_test;
use crate::docker_peer::DockerPeer;
use crate::docker_support::{self, docker, BUILT_IMAGE_RUN_ENV, SANDBOX_UID};
use crate::support::Org;

/// Every compose file at the repository's root runs sandboxd as the sandbox uid and sets
/// `SANDBOXD_SANDBOX_UID` to it.
#[test]
fn every_compose_file_runs_sandboxd_and_its_sandboxes_as_uid_10001() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = agenticos::catalog::repo::compose_files(root).expect("listing the compose files");
    assert!(!files.is_empty());
    for file in files {
        let text = std::fs::read_to_string(&file).expect("compose file");
        let uid = SANDBOX_UID.to_string();
        assert!(
            text.lines().any(|l| l.trim() == format!("SANDBOXD_SANDBOX_UID: \"{uid}\"")),
            "{} does not set SANDBOXD_SANDBOX_UID: \"{uid}\"",
            file.display()
        );
        assert!(
            text.lines().any(|l| l.trim() == format!("user: \"{uid}:{uid}\"")),
            "{} does not run sandboxd as {uid}:{uid}",
            file.display()
        );
    }
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return found };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(files_under(&path));
        } else {
            found.push(path);
        }
    }
    found
}

/// The file named `name` somewhere under the peer's workspace root, on the host.
fn on_host(peer: &DockerPeer, name: &str) -> PathBuf {
    let all = files_under(&peer.workspace_root);
    all.iter()
        .find(|p| p.file_name().is_some_and(|n| n == name))
        .cloned()
        .unwrap_or_else(|| panic!("no {name} under {}: {all:?}", peer.workspace_root.display()))
}

/// Runs `command` in `run`'s workspace; the answer must be a 200 result.
async fn exec(o: &Org<'_>, run: &str, command: &str) -> Value {
    let r = o.exec(run, command).await;
    assert_eq!(r.status, 200, "{command}: {}", r.body);
    r.json()
}

db_test! {
    async fn a_sandbox_runs_as_uid_10001_owns_its_files_on_the_host_and_libreoffice_converts_there(app: TestApp) {
        let Some(images) = docker_support::images("docker_uid::sandbox_uid").await else { return };
        // Built on first use, as the shipped workbench is: the builder adds the account. The run in
        // its name and environment makes the image this run's (removed with the peer).
        let runtimes = json!({
            "workbench": {
                "runtime": {
                    "name": "workbench-{run}",
                    "base_image": images.workbench,
                    "env_vars": {BUILT_IMAGE_RUN_ENV: "{run}"},
                },
                "description": "LibreOffice Writer on the test base",
                "mem_limit": "2g",
                "network_mode": "none",
            }
        })
        .to_string();
        let peer = DockerPeer::start_unprivileged(&images, &[("SANDBOXD_RUNTIMES", &runtimes)])
            .await
            .unwrap_or_else(|e| panic!("{e:#}"));
        let uid = SANDBOX_UID.to_string();
        // The service itself runs as the sandbox uid.
        assert_eq!(docker(&["exec", &peer.container, "id", "-u"]).expect("id -u"), uid);

        let o = Org::new(&app).await;
        let body = json!({"name": "unprivileged", "address": peer.url, "new_key": peer.token});
        assert_eq!(o.call(Method::POST, "/api/v1/sandbox-connections", Some(body)).await.status, 201);
        let agent = o.agent(json!({"name": "writer", "backend": "service", "scope": "conversation", "runtime": "workbench"})).await;
        let conv = o.conversation(&agent, json!({})).await;
        let run = o.run(&agent, Some(&conv), json!({})).await;

        // Inside the session: uid 10001, with the account and home the builder created.
        let who = exec(&o, &run, "id -u; id -un; echo \"$HOME\"; test -w \"$HOME\" && echo writable").await;
        assert_eq!(who["stdout"], format!("{uid}\nagent\n/home/agent\nwritable\n"), "{who}");
        let key = o.ws(&run, Method::GET, "state", None).await.json()["session_key"].as_str().expect("key").to_string();
        let container = DockerPeer::session_container(&key);
        assert_eq!(docker(&["inspect", "--format", "{{.Config.User}}", &container]).expect("inspect"), format!("{uid}:{uid}"));

        // A file written through the API and one the agent's command writes: both 10001's on the host.
        assert_eq!(o.write(&run, "letter.txt", "Dear reader,\nthis letter became a PDF.\n").await.status, 204);
        let converted = exec(&o, &run, "soffice --headless --convert-to pdf letter.txt && echo done > by-agent.txt").await;
        assert_eq!(converted["exit_code"], 0, "{converted}");
        for name in ["letter.txt", "letter.pdf", "by-agent.txt"] {
            let path = on_host(&peer, name);
            let meta = std::fs::metadata(&path).expect("metadata");
            assert_eq!((meta.uid(), meta.gid()), (SANDBOX_UID, SANDBOX_UID), "{}", path.display());
        }
        let pdf = std::fs::read(on_host(&peer, "letter.pdf")).expect("pdf");
        assert!(pdf.starts_with(b"%PDF-"), "not a PDF: {:?}", String::from_utf8_lossy(&pdf[..pdf.len().min(40)]));
        // The session's workspace directory itself was handed to the uid when the session opened.
        let workspace = on_host(&peer, "letter.txt").parent().expect("parent").to_path_buf();
        assert_eq!(std::fs::metadata(&workspace).expect("metadata").uid(), SANDBOX_UID);

        // The design's failure mode: the same image as a bare uid without a passwd entry (and so
        // without a home of its own) converts nothing.
        let image = docker(&["inspect", "--format", "{{.Config.Image}}", &container]).expect("image");
        let bare = std::process::Command::new("docker")
            .args(["run", "--rm", "--network", "none", "--user", "10002:10002", "--workdir", "/tmp", &image, "sh", "-c"])
            .arg("echo x > a.txt; soffice --headless --convert-to pdf a.txt; ls")
            .output()
            .expect("docker run");
        let said = format!("{}{}", String::from_utf8_lossy(&bare.stdout), String::from_utf8_lossy(&bare.stderr));
        assert!(!said.contains("a.pdf"), "a bare uid converted: {said}");
        assert!(said.contains("User installation could not be completed"), "{said}");
    }
}
