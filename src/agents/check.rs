//! What an agent may be saved with: its settings, checked for coherence (saving an agent publishes
//! it, so incoherent settings are refused with a clear message at their field), and the
//! organization's connections and runtimes that check reads. Below `service.rs`, which calls it:
//! this file never calls the agents service.

use serde::Deserialize;

use super::error::AgentError;
use super::manifest::{self, Manifest, WorkspaceFile};
use super::model::Backend;
use super::store::AgentValues;
use crate::access::Caller;
use crate::sandbox::connections::error::ConnectionError;
use crate::sandbox::connections::model::Connection;
use crate::sandbox::connections::service as connections;
use crate::state::AppState;
use crate::validate::{self, FieldErrors};
use crate::vocabulary::paths;
use crate::vocabulary::scope::Scope;

type Result<T> = std::result::Result<T, AgentError>;

pub const FILES_MAX: usize = 200;
pub const FILE_BYTES_MAX: usize = 256 * 1024;

/// An agent's sandbox settings. Saving publishes them; incoherent settings are refused.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = AgentBody)]
pub struct AgentInput {
    /// 1 to 100 characters, unique in the organization; no control or invisible characters.
    #[serde(default)]
    pub name: String,
    /// `state` (a document; files only) or `service` (a sandbox host; files and a shell).
    #[serde(default)]
    pub backend: String,
    /// None: the organization's default connection (`service` only).
    #[serde(default)]
    pub connection_id: Option<String>,
    /// `run`, `conversation`, `channel`, `user` or `agent` (with `agent`, every user of the agent
    /// reads each other's files).
    #[serde(default)]
    pub scope: String,
    /// A runtime alias; none: the connection's default.
    #[serde(default)]
    pub runtime: Option<String>,
    /// Whether the agent may run commands (`service` only; default true there, false for `state`,
    /// which runs none: `true` with `state` is refused).
    #[serde(default)]
    pub shell_enabled: Option<bool>,
    /// Written under `skills/` at each run's first workspace operation.
    #[serde(default)]
    pub skills: Vec<WorkspaceFile>,
    /// What a new workspace starts with: typed entries (`file`, `dir`, `git_repo`, `env`).
    #[serde(default)]
    pub manifest: Option<Manifest>,
    /// Deprecated alias, accepted for one release: files (`path`, `content`) and empty folders
    /// (`is_dir`), read as `file` and `dir` entries of `manifest`.
    #[serde(default)]
    #[schema(deprecated)]
    pub manifest_files: Option<Vec<WorkspaceFile>>,
}

/// The manifest sent: `manifest`, or the legacy `manifest_files` read as one (not both).
pub fn manifest_sent(errors: &mut FieldErrors, input: &AgentInput) -> Manifest {
    match (&input.manifest, &input.manifest_files) {
        (Some(_), Some(_)) => {
            errors.add(
                "manifest_files",
                "Send “manifest” only: “manifest_files” is its deprecated alias (files become entries of kind file or dir).",
            );
            Manifest::default()
        }
        (Some(m), None) => m.clone(),
        (None, Some(files)) => Manifest::from_files(files),
        (None, None) => Manifest::default(),
    }
}

fn check_files(errors: &mut FieldErrors, field: &str, files: &[WorkspaceFile]) -> Vec<WorkspaceFile> {
    if files.len() > FILES_MAX {
        errors.add(field, format!("At most {FILES_MAX} files."));
        return Vec::new();
    }
    let mut out = Vec::new();
    for f in files {
        match paths::normalise(&f.path) {
            Ok(p) if p.is_root() => errors.add(field, "A file needs a name, not the workspace root."),
            Ok(p) => {
                if f.content.len() > FILE_BYTES_MAX {
                    errors.add(field, format!("{} is larger than {} KiB.", p.relative(), FILE_BYTES_MAX / 1024));
                }
                if f.is_dir && !f.content.is_empty() {
                    errors.add(field, format!("{} is a folder and cannot have content.", p.relative()));
                }
                out.push(WorkspaceFile {
                    path: p.relative().to_string(),
                    content: f.content.clone(),
                    is_dir: f.is_dir,
                });
            }
            Err(m) => errors.add(field, format!("{}: {m}", f.path)),
        }
    }
    out
}

/// The coherent settings of an agent, as stored.
pub struct Checked {
    pub name: String,
    backend: Backend,
    connection_id: Option<String>,
    pub scope: Scope,
    runtime: Option<String>,
    shell_enabled: bool,
    skills: Vec<WorkspaceFile>,
    manifest: Manifest,
}

impl Checked {
    pub fn values(&self) -> AgentValues<'_> {
        AgentValues {
            name: &self.name,
            backend: self.backend,
            connection_id: self.connection_id.as_deref(),
            scope: self.scope,
            runtime: self.runtime.as_deref(),
            shell_enabled: self.shell_enabled,
            skills: &self.skills,
            manifest: &self.manifest,
        }
    }
}

pub async fn check(st: &AppState, caller: &Caller, input: &AgentInput) -> Result<Checked> {
    let mut errors = FieldErrors::new();
    let name = validate::name(&mut errors, "name", &input.name, "agent name");
    let backend = Backend::parse(&input.backend);
    if backend.is_none() {
        errors.add("backend", "Choose state (a document, no commands) or service (a sandbox host).");
    }
    let scope = Scope::parse(&input.scope);
    if scope.is_none() {
        errors.add("scope", "Choose run, conversation, channel, user or agent.");
    }
    let connection_id = input.connection_id.clone().filter(|c| !c.trim().is_empty());
    let runtime = input.runtime.clone().map(|r| r.trim().to_string()).filter(|r| !r.is_empty());
    if runtime.as_deref().is_some_and(|r| !crate::catalog::is_valid_alias(r)) {
        errors.add("runtime", "A runtime alias is lower-case letters, digits and dashes, starting with a letter.");
    }
    match backend {
        Some(Backend::State) => {
            if connection_id.is_some() {
                errors.add(
                    "connection_id",
                    "A state workspace is a document in this console's database: it has no connection.",
                );
            }
            if runtime.is_some() {
                errors.add("runtime", "A state workspace runs no commands, so it has no runtime.");
            }
            if input.shell_enabled == Some(true) {
                errors.add("shell_enabled", "A state workspace runs no commands, so it has no shell.");
            }
        }
        Some(Backend::Service) => {
            let connection_ok = check_connection(st, caller, connection_id.as_deref(), &mut errors).await?;
            if let (true, Some(r)) = (connection_ok && !errors.has("runtime"), &runtime) {
                check_runtime(st, caller, connection_id.as_deref(), r, &mut errors).await?;
            }
        }
        None => {}
    }
    let skills = check_files(&mut errors, "skills", &input.skills);
    let sent = manifest_sent(&mut errors, input);
    let manifest = manifest::check::check(&mut errors, "manifest", &sent);
    let mut c = st.db.conn().await?;
    manifest::check::check_secrets(&mut c, &caller.org_id, &mut errors, "manifest", &manifest)
        .await
        .map_err(AgentError::Internal)?;
    drop(c);
    errors.into_result().map_err(AgentError::Invalid)?;
    Ok(Checked {
        name,
        backend: backend.unwrap_or(Backend::State),
        connection_id,
        scope: scope.unwrap_or(Scope::Conversation),
        runtime,
        shell_enabled: backend == Some(Backend::Service) && input.shell_enabled.unwrap_or(true),
        skills,
        manifest,
    })
}

/// A runtime the catalog does not know must be one the connection's host offers (asked live);
/// anything else could never start.
async fn check_runtime(
    st: &AppState,
    caller: &Caller,
    connection_id: Option<&str>,
    runtime: &str,
    errors: &mut FieldErrors,
) -> Result<()> {
    if st.catalog.get(runtime).is_some() {
        return Ok(());
    }
    match live_runtimes(st, caller, connection_id).await {
        Ok(offered) if offered.iter().any(|r| r == runtime) => {}
        Ok(offered) => errors.add(
            "runtime",
            format!(
                "“{runtime}” is not in the runtime catalog and the connection's host does not offer it (it offers: {}).",
                if offered.is_empty() { "none".to_string() } else { offered.join(", ") }
            ),
        ),
        Err(ConnectionError::Internal(e)) => return Err(AgentError::Internal(e)),
        Err(e) => errors.add(
            "runtime",
            format!("“{runtime}” is not in the runtime catalog, and the connection's host could not be asked: {e}."),
        ),
    }
    Ok(())
}

/// A `service` agent needs a sandboxd connection with a credential: the chosen one, else the
/// default. Whether it has one (a message at `connection_id` otherwise).
async fn check_connection(st: &AppState, caller: &Caller, id: Option<&str>, errors: &mut FieldErrors) -> Result<bool> {
    let conn = match id {
        Some(id) => match connections::get(st, caller, id).await {
            Ok(c) => Some(c),
            Err(_) => {
                errors.add("connection_id", "This connection does not exist in this organization.");
                return Ok(false);
            }
        },
        None => default_connection(st, caller).await?,
    };
    let before = errors.0.len();
    match conn {
        None => errors.add(
            "connection_id",
            "This organization has no sandbox connection yet. Register a host under Sandboxes, or use the state backend.",
        ),
        Some(c) if !c.has_credential() => errors.add(
            "connection_id",
            format!("The connection “{}” has no credential in the vault; edit it and add the host's token first.", c.name),
        ),
        Some(_) => {}
    }
    Ok(errors.0.len() == before)
}

async fn default_connection(st: &AppState, caller: &Caller) -> Result<Option<Connection>> {
    Ok(org_connections(st, caller).await?.into_iter().find(|c| c.is_default))
}

pub(super) async fn org_connections(st: &AppState, caller: &Caller) -> Result<Vec<Connection>> {
    Ok(connections::list(st, caller).await?)
}

/// The runtimes the connection's host allows right now (read live; the host is right): the
/// chosen connection, else the organization's default. Its failures are the connection's.
pub async fn live_runtimes(
    st: &AppState,
    caller: &Caller,
    connection_id: Option<&str>,
) -> std::result::Result<Vec<String>, ConnectionError> {
    if !caller.role.can_see_sandboxes() {
        return Err(ConnectionError::Forbidden);
    }
    let id = match connection_id.filter(|c| !c.is_empty()) {
        Some(id) => id.to_string(),
        None => connections::list(st, caller)
            .await?
            .into_iter()
            .find(|c| c.is_default)
            .map(|c| c.id)
            .ok_or_else(|| ConnectionError::NoneYet)?,
    };
    let (_, policy) = connections::policy(st, caller, &id).await?;
    Ok(policy.runtimes.into_iter().map(|r| r.alias).collect())
}
