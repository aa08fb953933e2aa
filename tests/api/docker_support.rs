#![allow(dead_code)]
//! What the Docker tests share: is an engine there, the images built here
//! (`tests/docker-images/build.sh`, once per machine, cached by a content hash), and the labels
//! and sweeps that leave no container of a test run behind.
//!
//! Without an engine (`docker info` fails) a Docker test prints `SKIPPED` and returns; under
//! `CI=true` it fails instead. Every container a test starts carries [`LABEL`] and
//! [`RUN_LABEL`]`=<run>`, where `<run>` starts with the test process's id: a run whose process
//! is gone is swept by the next one ([`sweep_abandoned`]).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Instant;

use anyhow::{bail, Context as _};

/// Every container of the Docker tests carries this label.
pub const LABEL: &str = "agenticos.test=docker-tests";
/// The label key naming the test run (`<pid>-<random>`).
pub const RUN_LABEL: &str = "agenticos.test.run";
/// Host directories of the runs: `<RUNS_DIR>/<run>/…`, mounted at the same path into the
/// sandboxd container, so the session containers it starts bind-mount from here too.
pub const RUNS_DIR: &str = "/tmp/agenticos-docker-tests";
/// sandboxd 0.2.37 names a persisted session's container `sandboxd-<session id>`.
pub const SESSION_CONTAINER_PREFIX: &str = "sandboxd-";

/// The uid sandboxd and the sandboxes of a built runtime run as in the deployment
/// (`SANDBOXD_SANDBOX_UID` in every compose file).
pub const SANDBOX_UID: u32 = 10001;

/// The group id of the engine's socket (`/var/run/docker.sock`), which a sandboxd running as
/// [`SANDBOX_UID`] joins to reach the engine.
pub fn socket_gid() -> anyhow::Result<String> {
    use std::os::unix::fs::MetadataExt as _;
    let meta = std::fs::metadata("/var/run/docker.sock").context("reading /var/run/docker.sock")?;
    Ok(meta.gid().to_string())
}

/// This machine's address on its default route (no packet is sent: UDP `connect` only picks it);
/// a container on a network reaches the machine there.
pub fn outward_address() -> String {
    let socket = std::net::UdpSocket::bind(("0.0.0.0", 0)).expect("udp");
    socket.connect(("1.1.1.1", 53)).expect("route");
    socket.local_addr().expect("addr").ip().to_string()
}

/// The images the Docker tests run.
#[derive(Debug, Clone)]
pub struct Images {
    pub base: String,
    /// `ghcr.io/vstorm-co/sandboxd:<catalog/sandboxd.version>`
    pub sandboxd: String,
    /// Reduced stand-in for the catalog's `python` runtime.
    pub python: String,
    /// Reduced stand-in for the catalog's `workbench` runtime.
    pub workbench: String,
}

/// The images, built on first use in this process (and skipped when they exist with the same
/// content hash); `None` when no engine answers outside CI (the test prints SKIPPED).
///
/// # Panics
/// Under `CI=true` without an engine, or when a build fails (the message has its output).
pub async fn images(test: &str) -> Option<Images> {
    static IMAGES: OnceLock<Built<Images>> = OnceLock::new();
    built_once(&IMAGES, test, build_images).await
}

/// What a build gave: the images, or `None` without an engine, or the failure's text.
type Built<T> = Result<Option<T>, String>;

/// `build` once per process (the first caller runs it, the others wait for its answer); `None`
/// (SKIPPED) without an engine outside CI.
///
/// # Panics
/// Under `CI=true` without an engine, or when the build failed.
async fn built_once<T: Clone + Send + Sync + 'static>(
    cell: &'static OnceLock<Built<T>>,
    test: &str,
    build: fn() -> anyhow::Result<T>,
) -> Option<T> {
    let result = tokio::task::spawn_blocking(move || {
        cell.get_or_init(|| {
            if !engine_answers() {
                return Ok(None);
            }
            build().map(Some).map_err(|e| format!("{e:#}"))
        })
        .clone()
    })
    .await
    .expect("image build thread");
    match result {
        Ok(Some(images)) => Some(images),
        Ok(None) if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!("{test}: no Docker engine answers `docker info` (CI=true: .ci/run starts dockerd)")
        }
        Ok(None) => {
            eprintln!("SKIPPED {test}: no Docker engine answers `docker info`");
            None
        }
        Err(error) => panic!("{test}: building the test images failed: {error}"),
    }
}

/// Whether `docker info` answers.
pub fn engine_answers() -> bool {
    Command::new("docker").arg("info").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
}

/// The images of the compose stack's test: [`Images`] plus the stand-ins for the deployment's
/// PostgreSQL image and the console image built from the repository's own `Dockerfile`
/// (`build.sh deployment`).
#[derive(Debug, Clone)]
pub struct DeploymentImages {
    pub images: Images,
    /// `agenticos-test/postgres:<hash>`
    pub postgres: String,
    /// `agenticos-test/console:local`
    pub console: String,
}

/// [`images`] for the compose stack, with its own images built (the console image: a release
/// build of this repository in Docker, minutes on a cold machine).
///
/// # Panics
/// As [`images`].
pub async fn deployment_images(test: &str) -> Option<DeploymentImages> {
    static IMAGES: OnceLock<Built<DeploymentImages>> = OnceLock::new();
    built_once(&IMAGES, test, build_deployment_images).await
}

fn build_deployment_images() -> anyhow::Result<DeploymentImages> {
    let out = run_build(&["deployment"])?;
    Ok(DeploymentImages {
        images: images_from(&out)?,
        postgres: printed(&out, "postgres")?,
        console: printed(&out, "console")?,
    })
}

fn build_images() -> anyhow::Result<Images> {
    images_from(&run_build(&[])?)
}

/// Runs `build.sh ARGS…`; its standard output.
fn run_build(args: &[&str]) -> anyhow::Result<String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/docker-images/build.sh");
    let started = Instant::now();
    let out = Command::new("bash").arg(&script).args(args).output().context("running tests/docker-images/build.sh")?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        bail!("{} exited with {}:\n{stderr}", script.display(), out.status);
    }
    for line in stderr.lines().filter(|l| l.starts_with("built ")) {
        eprintln!("docker images: {line}");
    }
    eprintln!("docker images: ready in {:.1} s", started.elapsed().as_secs_f64());
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The image build.sh printed as `<name>=<image>`.
fn printed(stdout: &str, name: &str) -> anyhow::Result<String> {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name}=")))
        .map(str::to_string)
        .with_context(|| format!("build.sh printed no {name}= line:\n{stdout}"))
}

fn images_from(stdout: &str) -> anyhow::Result<Images> {
    let get = |name: &str| printed(stdout, name);
    Ok(Images { base: get("base")?, sandboxd: get("sandboxd")?, python: get("python")?, workbench: get("workbench")? })
}

/// `docker ARGS…`: its standard output, trimmed; an error with its standard error otherwise.
pub fn docker(args: &[&str]) -> anyhow::Result<String> {
    let out = Command::new("docker").args(args).output().with_context(|| format!("running docker {args:?}"))?;
    if !out.status.success() {
        bail!("docker {} failed: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// A new run id: this process's id and 8 random hex digits.
pub fn new_run_id() -> String {
    format!("{}-{}", std::process::id(), &uuid::Uuid::new_v4().simple().to_string()[..8])
}

/// `<RUNS_DIR>/<run>`
pub fn run_dir(run: &str) -> PathBuf {
    Path::new(RUNS_DIR).join(run)
}

/// Whether the process that started `run` is gone.
fn run_is_abandoned(run: &str) -> bool {
    let pid = run.split('-').next().unwrap_or_default();
    !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()) && !Path::new("/proc").join(pid).exists()
}

/// The run a session container belongs to: its bind mounts come from `<RUNS_DIR>/<run>/…`.
fn run_of_mounts(mounts: &str) -> Option<String> {
    mounts.split_whitespace().find_map(|source| {
        let rest = source.strip_prefix(RUNS_DIR)?.strip_prefix('/')?;
        rest.split('/').next().filter(|r| !r.is_empty()).map(str::to_string)
    })
}

/// Removes the containers of `run` (or, with `None`, of every run whose process is gone): the
/// labelled sandboxd containers and the session containers they started. Returns their names.
pub fn remove_containers(run: Option<&str>) -> Vec<String> {
    let mut doomed = Vec::new();
    let labelled = docker(&[
        "ps",
        "-a",
        "--filter",
        &format!("label={LABEL}"),
        "--format",
        &format!("{{{{.Names}}}} {{{{.Label \"{RUN_LABEL}\"}}}}"),
    ])
    .unwrap_or_default();
    for line in labelled.lines() {
        let mut parts = line.split_whitespace();
        let (Some(name), Some(owner)) = (parts.next(), parts.next()) else { continue };
        if run.map_or(run_is_abandoned(owner), |r| r == owner) {
            doomed.push(name.to_string());
        }
    }
    let sessions =
        docker(&["ps", "-a", "--filter", &format!("name=^{SESSION_CONTAINER_PREFIX}"), "--format", "{{.Names}}"])
            .unwrap_or_default();
    for name in sessions.lines() {
        let mounts = docker(&["inspect", "--format", "{{range .Mounts}}{{.Source}} {{end}}", name]).unwrap_or_default();
        if let Some(owner) = run_of_mounts(&mounts) {
            if run.map_or(run_is_abandoned(&owner), |r| r == owner) {
                doomed.push(name.to_string());
            }
        }
    }
    if !doomed.is_empty() {
        let mut args = vec!["rm", "-f", "-v"];
        args.extend(doomed.iter().map(String::as_str));
        if let Err(error) = docker(&args) {
            eprintln!("docker tests: {error:#}");
        }
    }
    doomed
}

/// The repository sandboxd 0.2.37 tags the images it builds for a runtime in.
pub const BUILT_IMAGE_REPOSITORY: &str = "pydantic-ai-backend-runtime";
/// A runtime a test has sandboxd build sets this environment variable to its run, so the image
/// is its own (a fresh build per run) and found again here.
pub const BUILT_IMAGE_RUN_ENV: &str = "AGENTICOS_TEST_RUN";

/// Removes the images sandboxd built for `run` (or, with `None`, for every run whose process is
/// gone), tagged or left untagged. Returns their ids.
pub fn remove_built_images(run: Option<&str>) -> Vec<String> {
    let listed = docker(&["images", "--format", "{{.ID}} {{.Repository}}"]).unwrap_or_default();
    let mut doomed = Vec::new();
    for line in listed.lines() {
        let Some((id, repository)) = line.split_once(' ') else { continue };
        if (repository != BUILT_IMAGE_REPOSITORY && repository != "<none>") || doomed.iter().any(|d| d == id) {
            continue;
        }
        let env = docker(&["image", "inspect", "--format", "{{range .Config.Env}}{{println .}}{{end}}", id])
            .unwrap_or_default();
        let owner = env.lines().find_map(|l| l.strip_prefix(&format!("{BUILT_IMAGE_RUN_ENV}=")));
        if owner.is_some_and(|owner| run.map_or(run_is_abandoned(owner), |r| r == owner)) {
            doomed.push(id.to_string());
        }
    }
    if !doomed.is_empty() {
        let mut args = vec!["rmi", "-f"];
        args.extend(doomed.iter().map(String::as_str));
        if let Err(error) = docker(&args) {
            eprintln!("docker tests: {error:#}");
        }
    }
    doomed
}

/// Removes what runs whose process is gone left behind: containers, the images sandboxd built
/// for them, then their directories.
pub fn sweep_abandoned() {
    let mut swept = remove_containers(None);
    swept.extend(remove_built_images(None));
    swept.extend(remove_compose_leftovers(None));
    if !swept.is_empty() {
        eprintln!("docker tests: swept what finished runs left: {}", swept.join(" "));
    }
    let Ok(entries) = std::fs::read_dir(RUNS_DIR) else { return };
    for entry in entries.flatten() {
        let run = entry.file_name().to_string_lossy().to_string();
        if run_is_abandoned(&run) && !entry.path().join("KEPT").exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// The compose project name of the stack test of `run`.
pub fn compose_project(run: &str) -> String {
    format!("{COMPOSE_PROJECT_PREFIX}{run}")
}

/// Every compose project of the tests is named `<COMPOSE_PROJECT_PREFIX><run>`.
pub const COMPOSE_PROJECT_PREFIX: &str = "agenticos-test-";

/// Removes the networks and volumes of the compose projects of `run` (or, with `None`, of
/// every run whose process is gone); their containers carry the run label and go with
/// [`remove_containers`] first. Returns their names.
pub fn remove_compose_leftovers(run: Option<&str>) -> Vec<String> {
    let mut removed = Vec::new();
    for kind in ["volume", "network"] {
        let listed = docker(&[
            kind,
            "ls",
            "--filter",
            "label=com.docker.compose.project",
            "--format",
            "{{.Name}} {{.Label \"com.docker.compose.project\"}}",
        ])
        .unwrap_or_default();
        let doomed: Vec<&str> = listed
            .lines()
            .filter_map(|line| {
                let (name, project) = line.split_once(' ')?;
                let owner = project.strip_prefix(COMPOSE_PROJECT_PREFIX)?;
                run.map_or(run_is_abandoned(owner), |r| r == owner).then_some(name)
            })
            .collect();
        if doomed.is_empty() {
            continue;
        }
        let mut args = vec![kind, "rm"];
        args.extend(&doomed);
        match docker(&args) {
            Ok(_) => removed.extend(doomed.iter().map(|n| n.to_string())),
            Err(error) => eprintln!("docker tests: {error:#}"),
        }
    }
    removed
}

/// Names of the containers (running or not) of `run`: labelled, and session containers.
pub fn containers_of(run: &str) -> Vec<String> {
    let mut names = Vec::new();
    let labelled = docker(&["ps", "-a", "--filter", &format!("label={RUN_LABEL}={run}"), "--format", "{{.Names}}"])
        .unwrap_or_default();
    names.extend(labelled.lines().map(str::to_string));
    let sessions =
        docker(&["ps", "-a", "--filter", &format!("name=^{SESSION_CONTAINER_PREFIX}"), "--format", "{{.Names}}"])
            .unwrap_or_default();
    for name in sessions.lines() {
        let mounts = docker(&["inspect", "--format", "{{range .Mounts}}{{.Source}} {{end}}", name]).unwrap_or_default();
        if run_of_mounts(&mounts).as_deref() == Some(run) {
            names.push(name.to_string());
        }
    }
    names
}
