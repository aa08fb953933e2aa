//! A real Docker engine for the engine-integration tests: tiny images imported from
//! `busybox-static` (no registry), containers with ports published on 127.0.0.1 only (or no
//! network), every object labelled `agenticos.test=dockerbollard-<run id>` and removed when the
//! run's guard drops, also after a failed assertion. Earlier processes' leftovers are swept once.
//!
//! The images are NOT tagged `ghcr.io/vstorm-co/sandboxd:<pin>`: that tag belongs to the real
//! sandboxd image other tests build on this engine, and re-tagging it would break them. They get
//! a name of their own, and the console is told it with `AGENTICOS_SANDBOXD_IMAGE`.

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// The label key every object of these tests carries.
pub const LABEL: &str = "agenticos.test";
/// The socket of the engine these tests use.
pub const SOCKET: &str = "/var/run/docker.sock";

fn docker(args: &[&str]) -> (bool, String) {
    match Command::new("docker").args(args).output() {
        Ok(o) => {
            let mut text = String::from_utf8_lossy(&o.stdout).into_owned();
            text.push_str(&String::from_utf8_lossy(&o.stderr));
            (o.status.success(), text)
        }
        Err(e) => (false, e.to_string()),
    }
}

fn docker_ok(args: &[&str]) -> String {
    let (ok, out) = docker(args);
    assert!(ok, "docker {args:?} failed: {out}");
    out
}

/// Whether an engine answers; under `CI=true` a missing engine fails the test, otherwise the
/// test prints SKIPPED and returns.
pub fn engine_answers() -> bool {
    let (ok, out) = docker(&["version", "--format", "{{.Server.APIVersion}}"]);
    if ok {
        return true;
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("CI=true and no Docker engine answers at {SOCKET}: {out}");
    }
    eprintln!("SKIPPED: no Docker engine answers ({})", out.trim());
    false
}

/// Removes, once per process, what earlier test processes left (another pid in the run id).
fn sweep_earlier_runs() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let ours = format!("dockerbollard-{}-", std::process::id());
        let listed = docker_ok(&[
            "ps",
            "-a",
            "--filter",
            &format!("label={LABEL}"),
            "--format",
            "{{.ID}} {{.Label \"agenticos.test\"}}",
        ]);
        for line in listed.lines() {
            if let Some((id, run)) = line.split_once(' ') {
                if run.starts_with("dockerbollard-") && !run.starts_with(&ours) {
                    docker(&["rm", "-f", id]);
                }
            }
        }
        let images =
            docker_ok(&["images", "--filter", &format!("label={LABEL}"), "--format", "{{.Repository}}:{{.Tag}}"]);
        for image in images.lines().filter(|i| i.starts_with("agenticos-test/dockerbollard-") && !i.contains(&ours)) {
            docker(&["rmi", "-f", image]);
        }
    });
}

/// One test's objects on the engine; dropping it removes them.
pub struct DockerRun {
    /// `dockerbollard-<pid>-<n>`: the label value and part of every name.
    pub id: String,
    /// The image name the tagged images share (`AGENTICOS_SANDBOXD_IMAGE`).
    pub image_name: String,
    /// A value set in each container's environment that no answer may contain.
    pub env_secret: String,
    containers: Vec<String>,
    tags: Vec<String>,
}

impl DockerRun {
    /// A new run, with the sandboxd image name imported under `tags`; none when no engine answers.
    pub fn start(tags: &[&str]) -> Option<DockerRun> {
        if !engine_answers() {
            return None;
        }
        sweep_earlier_runs();
        static N: AtomicU32 = AtomicU32::new(0);
        let id = format!("dockerbollard-{}-{}", std::process::id(), N.fetch_add(1, Ordering::SeqCst));
        let image_name = format!("agenticos-test/{id}-sandboxd");
        let mut run = DockerRun {
            env_secret: format!("env-secret-{id}"),
            image_name,
            id,
            containers: Vec::new(),
            tags: Vec::new(),
        };
        let dir = tempfile::tempdir().expect("tempdir");
        let rootfs = dir.path().join("rootfs");
        std::fs::create_dir_all(rootfs.join("bin")).expect("rootfs");
        std::fs::create_dir_all(rootfs.join("www")).expect("rootfs");
        std::fs::copy("/bin/busybox", rootfs.join("bin/busybox")).expect("busybox-static is installed");
        std::fs::write(rootfs.join("www/index.html"), "sandboxd stand-in\n").expect("index");
        let tar = dir.path().join("rootfs.tar");
        let ok = Command::new("tar").arg("-C").arg(&rootfs).arg("-cf").arg(&tar).arg(".").status().expect("tar");
        assert!(ok.success(), "tar failed");
        for (i, tag) in tags.iter().enumerate() {
            let reference = format!("{}:{tag}", run.image_name);
            if i == 0 {
                import(&tar, &reference, &run.id);
            } else {
                docker_ok(&["tag", &format!("{}:{}", run.image_name, tags[0]), &reference]);
            }
            run.tags.push(reference);
        }
        Some(run)
    }

    fn label(&self) -> String {
        format!("{LABEL}={}", self.id)
    }

    /// A busybox httpd on port 8080 of a container of `tag`, published on 127.0.0.1 only; its
    /// name and the host port. `-v` logs every request to the container's output.
    pub fn httpd(&mut self, tag: &str, suffix: &str) -> (String, u16) {
        let name = format!("{}-{suffix}", self.id);
        let label = self.label();
        let env = format!("SANDBOXD_TOKEN={}", self.env_secret);
        let image = format!("{}:{tag}", self.image_name);
        self.containers.push(name.clone());
        docker_ok(&[
            "run",
            "-d",
            "--name",
            &name,
            "--label",
            &label,
            "-e",
            &env,
            "-p",
            "127.0.0.1::8080",
            &image,
            "/bin/busybox",
            "httpd",
            "-f",
            "-v",
            "-p",
            "8080",
            "-h",
            "/www",
        ]);
        let port = docker_ok(&["port", &name, "8080/tcp"]);
        let port = port.lines().next().and_then(|l| l.rsplit(':').next()).and_then(|p| p.trim().parse().ok());
        (name, port.expect("a published port"))
    }

    /// A container named `name` with no network that sleeps (a session container's stand-in).
    pub fn sleeper(&mut self, tag: &str, name: &str) {
        let label = self.label();
        let image = format!("{}:{tag}", self.image_name);
        self.containers.push(name.to_string());
        docker_ok(&[
            "run",
            "-d",
            "--name",
            name,
            "--label",
            &label,
            "--network",
            "none",
            "-m",
            "64m",
            &image,
            "/bin/busybox",
            "sleep",
            "600",
        ]);
    }

    /// What a container wrote (httpd's request log).
    pub fn logs(&self, name: &str) -> String {
        docker_ok(&["logs", name])
    }

    /// Containers and images of run `id` still on the engine.
    pub fn leftovers(id: &str) -> Vec<String> {
        let label = format!("label={LABEL}={id}");
        let mut left: Vec<String> =
            docker_ok(&["ps", "-a", "-q", "--filter", &label]).lines().map(str::to_string).collect();
        left.extend(docker_ok(&["images", "-q", "--filter", &label]).lines().map(str::to_string));
        left
    }
}

fn import(tar: &Path, reference: &str, run_id: &str) {
    let change = format!("LABEL {LABEL}={run_id}");
    let tar = tar.to_str().expect("utf-8 path");
    docker_ok(&["import", "--change", &change, tar, reference]);
}

impl Drop for DockerRun {
    fn drop(&mut self) {
        for c in &self.containers {
            docker(&["rm", "-f", c]);
        }
        for t in &self.tags {
            docker(&["rmi", "-f", t]);
        }
    }
}
