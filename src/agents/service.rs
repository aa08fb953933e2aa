//! Agents and their sandbox settings, conversations, runs. Saving an agent publishes it, so
//! incoherent settings are refused with a clear message.

use super::model::{Agent, Backend, Conversation, Run, StartedBy, WorkspaceFile};
use super::store::{self, AgentValues};
use crate::access::Caller;
use crate::audit::service as audit;
use crate::db::{self, DbError};
use crate::sandbox::connections::model::{Connection, ConnectionKind};
use crate::sandbox::connections::service as connections;
use crate::sandbox::workspaces::error::WorkspaceError;
use crate::sandbox::workspaces::key::Scope;
use crate::sandbox::workspaces::model::WorkspaceState;
use crate::sandbox::workspaces::paths;
use crate::sandbox::workspaces::service as workspaces;
use crate::state::AppState;
use crate::validate;
use crate::web::{AppError, FieldErrors, Kind};

pub const FILES_MAX: usize = 200;
pub const FILE_BYTES_MAX: usize = 256 * 1024;

type Result<T> = std::result::Result<T, AppError>;

fn ensure_see(caller: &Caller) -> Result<()> {
    if caller.role.can_see_sandboxes() {
        Ok(())
    } else {
        Err(AppError::forbidden())
    }
}

#[derive(Debug, Clone, Default)]
pub struct AgentInput {
    pub name: String,
    pub backend: String,
    pub connection_id: Option<String>,
    pub scope: String,
    pub runtime: Option<String>,
    pub shell_enabled: bool,
    pub skills: Vec<WorkspaceFile>,
    pub manifest_files: Vec<WorkspaceFile>,
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

struct Checked {
    name: String,
    backend: Backend,
    connection_id: Option<String>,
    scope: Scope,
    runtime: Option<String>,
    skills: Vec<WorkspaceFile>,
    manifest_files: Vec<WorkspaceFile>,
}

async fn check(st: &AppState, caller: &Caller, input: &AgentInput) -> Result<Checked> {
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
    if let Some(r) = &runtime {
        if !crate::catalog::is_valid_alias(r) {
            errors.add("runtime", "A runtime alias is lower-case letters, digits and dashes, starting with a letter.");
        }
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
        }
        Some(Backend::Service) => {
            let conn = match &connection_id {
                Some(id) => match connections::get(st, caller, id).await {
                    Ok(c) => Some(c),
                    Err(_) => {
                        errors.add("connection_id", "This connection does not exist in this organization.");
                        None
                    }
                },
                None => connections::list(st, caller).await.map_err(AppError::from)?.into_iter().find(|c| c.is_default),
            };
            match conn {
                None if connection_id.is_none() => errors.add(
                    "connection_id",
                    "This organization has no sandbox connection yet. Register a host under Sandboxes, or use the state backend.",
                ),
                Some(c) if !c.has_credential() => errors.add(
                    "connection_id",
                    format!("The connection “{}” has no credential in the vault; edit it and add the host's token first.", c.name),
                ),
                Some(c) if c.kind == ConnectionKind::Daytona => {
                    errors.add("connection_id", "Daytona workspaces are not supported yet; pick a sandboxd connection.")
                }
                _ => {}
            }
        }
        None => {}
    }
    let skills = check_files(&mut errors, "skills", &input.skills);
    let manifest_files = check_files(&mut errors, "manifest_files", &input.manifest_files);
    if !errors.is_empty() {
        return Err(AppError::invalid(errors));
    }
    Ok(Checked {
        name,
        backend: backend.unwrap_or(Backend::State),
        connection_id,
        scope: scope.unwrap_or(Scope::Conversation),
        runtime,
        skills,
        manifest_files,
    })
}

fn values(c: &Checked, shell_enabled: bool) -> AgentValues<'_> {
    AgentValues {
        name: &c.name,
        backend: c.backend,
        connection_id: c.connection_id.as_deref(),
        scope: c.scope,
        runtime: c.runtime.as_deref(),
        shell_enabled,
        skills: &c.skills,
        manifest_files: &c.manifest_files,
    }
}

fn name_taken() -> AppError {
    let mut f = FieldErrors::new();
    f.add("name", "An agent with this name exists already in this organization.");
    AppError::invalid(f)
}

pub async fn list(st: &AppState, caller: &Caller) -> Result<Vec<Agent>> {
    ensure_see(caller)?;
    let mut c = st.db.conn().await?;
    Ok(store::list_agents(&mut c, &caller.org_id).await?)
}

pub async fn get(st: &AppState, caller: &Caller, id: &str) -> Result<Agent> {
    let mut c = st.db.conn().await?;
    store::get_agent(&mut c, &caller.org_id, id).await?.ok_or_else(AppError::not_found)
}

pub async fn create(st: &AppState, caller: &Caller, input: AgentInput) -> Result<Agent> {
    if !caller.role.can_edit_agents() {
        return Err(AppError::forbidden());
    }
    let checked = check(st, caller, &input).await?;
    let id = db::new_id();
    let mut tx = st.db.begin().await?;
    match store::insert_agent(
        &mut tx,
        &id,
        &caller.org_id,
        &values(&checked, input.shell_enabled),
        &caller.user_id,
        db::now_ms(),
    )
    .await
    {
        Err(DbError::Conflict { .. }) => return Err(name_taken()),
        other => other?,
    }
    audit::record(
        &mut tx,
        &caller.org_id,
        &caller.actor(),
        "agent.created",
        &checked.name,
        &format!("{} scope", checked.scope.as_str()),
    )
    .await?;
    let agent = store::get_agent(&mut tx, &caller.org_id, &id).await?.ok_or_else(AppError::not_found)?;
    tx.commit().await.map_err(DbError::from)?;
    Ok(agent)
}

pub async fn update(st: &AppState, caller: &Caller, id: &str, input: AgentInput) -> Result<Agent> {
    if !caller.role.can_edit_agents() {
        return Err(AppError::forbidden());
    }
    get(st, caller, id).await?;
    let checked = check(st, caller, &input).await?;
    let mut tx = st.db.begin().await?;
    match store::update_agent(&mut tx, &caller.org_id, id, &values(&checked, input.shell_enabled), db::now_ms()).await {
        Err(DbError::Conflict { .. }) => return Err(name_taken()),
        other => other?,
    };
    audit::record(&mut tx, &caller.org_id, &caller.actor(), "agent.sandbox_settings_changed", &checked.name, "")
        .await?;
    let agent = store::get_agent(&mut tx, &caller.org_id, id).await?.ok_or_else(AppError::not_found)?;
    tx.commit().await.map_err(DbError::from)?;
    Ok(agent)
}

/// The runtimes the agent's connection's host allows right now (read live; the host is right).
pub async fn live_runtimes(st: &AppState, caller: &Caller, connection_id: Option<&str>) -> Result<Vec<String>> {
    ensure_see(caller)?;
    let conn = match connection_id.filter(|c| !c.is_empty()) {
        Some(id) => connections::get(st, caller, id).await.map_err(AppError::from)?,
        None => connections::list(st, caller)
            .await
            .map_err(AppError::from)?
            .into_iter()
            .find(|c| c.is_default)
            .ok_or_else(|| AppError::new(Kind::Conflict, "This organization has no sandbox connection yet."))?,
    };
    let (_, policy) = connections::policy(st, caller, &conn.id).await.map_err(AppError::from)?;
    Ok(policy.runtimes.into_iter().map(|r| r.alias).collect())
}

// -- conversations --------------------------------------------------------------------------

pub struct ConversationInput {
    pub agent_id: String,
    pub title: String,
    pub member_user_ids: Vec<String>,
    pub channel_key: Option<String>,
}

pub async fn create_conversation(st: &AppState, caller: &Caller, input: ConversationInput) -> Result<Conversation> {
    ensure_see(caller)?;
    let mut errors = FieldErrors::new();
    let title = validate::name(&mut errors, "title", &input.title, "title");
    let mut c = st.db.begin().await?;
    if store::get_agent(&mut c, &caller.org_id, &input.agent_id).await?.is_none() {
        errors.add("agent_id", "This agent does not exist in this organization.");
    }
    for u in &input.member_user_ids {
        if !store::is_org_member(&mut c, &caller.org_id, u).await? {
            errors.add("member_user_ids", format!("{u} is not a member of this organization."));
        }
    }
    let channel_key = input.channel_key.map(|k| k.trim().to_string()).filter(|k| !k.is_empty());
    if channel_key.as_ref().is_some_and(|k| k.len() > 200) {
        errors.add("channel_key", "A channel key has at most 200 characters.");
    }
    if !errors.is_empty() {
        return Err(AppError::invalid(errors));
    }
    let id = db::new_id();
    store::insert_conversation(
        &mut c,
        &id,
        &caller.org_id,
        &input.agent_id,
        &title,
        Some(&caller.user_id),
        channel_key.as_deref(),
        db::now_ms(),
    )
    .await?;
    store::add_conversation_member(&mut c, &id, &caller.user_id).await?;
    for u in &input.member_user_ids {
        store::add_conversation_member(&mut c, &id, u).await?;
    }
    let conv = store::get_conversation(&mut c, &caller.org_id, &id).await?.ok_or_else(AppError::not_found)?;
    c.commit().await.map_err(DbError::from)?;
    Ok(conv)
}

pub async fn get_conversation(st: &AppState, caller: &Caller, id: &str) -> Result<Conversation> {
    let mut c = st.db.conn().await?;
    let conv = store::get_conversation(&mut c, &caller.org_id, id).await?.ok_or_else(AppError::not_found)?;
    if !caller.role.can_see_sandboxes() && !conv.member_user_ids.contains(&caller.user_id) {
        return Err(AppError::not_found());
    }
    Ok(conv)
}

// -- runs -----------------------------------------------------------------------------------

pub struct RunInput {
    pub agent_id: String,
    pub conversation_id: Option<String>,
    pub started_by: String,
    pub user_id: Option<String>,
    pub trigger_as_creator: bool,
    pub channel_sender: Option<String>,
}

pub async fn create_run(st: &AppState, caller: &Caller, input: RunInput) -> Result<Run> {
    ensure_see(caller)?;
    let mut errors = FieldErrors::new();
    let started_by = StartedBy::parse(&input.started_by);
    if started_by.is_none() {
        errors.add("started_by", "Choose member, widget, trigger, channel or api.");
    }
    let mut c = st.db.begin().await?;
    let agent = store::get_agent(&mut c, &caller.org_id, &input.agent_id).await?;
    if agent.is_none() {
        errors.add("agent_id", "This agent does not exist in this organization.");
    }
    let conversation_id = input.conversation_id.filter(|v| !v.is_empty());
    if let Some(cid) = &conversation_id {
        match store::get_conversation(&mut c, &caller.org_id, cid).await? {
            None => errors.add("conversation_id", "This conversation does not exist in this organization."),
            Some(conv) if Some(&conv.agent_id) != agent.as_ref().map(|a| &a.id) => {
                errors.add("conversation_id", "This conversation belongs to another agent.")
            }
            _ => {}
        }
    }
    // Who the run acts for: a member or API client names a person of this organization.
    let user_id = match started_by {
        Some(StartedBy::Member) | Some(StartedBy::Api) => {
            let u = input.user_id.clone().filter(|u| !u.is_empty()).unwrap_or_else(|| caller.user_id.clone());
            if !store::is_org_member(&mut c, &caller.org_id, &u).await? {
                errors.add("user_id", "This person is not a member of this organization.");
            }
            Some(u)
        }
        Some(StartedBy::Trigger) => {
            let u = input.user_id.clone().filter(|u| !u.is_empty());
            if input.trigger_as_creator && u.is_none() {
                errors.add("user_id", "A trigger that runs as its creator names the creator.");
            }
            if let Some(u) = &u {
                if !store::is_org_member(&mut c, &caller.org_id, u).await? {
                    errors.add("user_id", "This person is not a member of this organization.");
                }
            }
            u
        }
        _ => None,
    };
    let channel_sender = input.channel_sender.filter(|s| !s.trim().is_empty());
    if started_by == Some(StartedBy::Channel) && channel_sender.is_none() {
        errors.add("channel_sender", "A channel run names its sender's platform id.");
    }
    if channel_sender.as_ref().is_some_and(|s| s.len() > 200) {
        errors.add("channel_sender", "A platform id has at most 200 characters.");
    }
    if !errors.is_empty() {
        return Err(AppError::invalid(errors));
    }
    let id = db::new_id();
    store::insert_run(
        &mut c,
        &id,
        &caller.org_id,
        &input.agent_id,
        conversation_id.as_deref(),
        started_by.unwrap_or(StartedBy::Api),
        user_id.as_deref(),
        input.trigger_as_creator && started_by == Some(StartedBy::Trigger),
        channel_sender.as_deref(),
        db::now_ms(),
    )
    .await?;
    let run = store::get_run(&mut c, &caller.org_id, &id).await?.ok_or_else(AppError::not_found)?;
    c.commit().await.map_err(DbError::from)?;
    Ok(run)
}

pub async fn get_run(st: &AppState, caller: &Caller, id: &str) -> Result<Run> {
    ensure_see(caller)?;
    let mut c = st.db.conn().await?;
    store::get_run(&mut c, &caller.org_id, id).await?.ok_or_else(AppError::not_found)
}

// -- what the console pages show ------------------------------------------------------------

/// The agents table: the organization's agents and connections (to name each agent's).
pub struct Listing {
    pub agents: Vec<Agent>,
    pub connections: Vec<Connection>,
}

pub async fn listing(st: &AppState, caller: &Caller) -> Result<Listing> {
    let agents = list(st, caller).await?;
    let connections = connections::list(st, caller).await.map_err(AppError::from)?;
    Ok(Listing { agents, connections })
}

/// What the *Runtime* field can offer for a backend and connection.
#[derive(Debug, Clone, Default)]
pub struct RuntimeChoice {
    /// What the host allows right now (read live).
    pub runtimes: Vec<String>,
    /// Why the host could not be asked, in words a person reads (only "connection default" then).
    pub unavailable: Option<String>,
    /// A `state` workspace runs no commands: it has no runtime and no host is asked.
    pub is_state: bool,
}

/// The *Runtime* field's choice: a `state` agent asks nobody; a `service` agent asks its
/// connection's host live (the organization's default when none is chosen).
pub async fn runtime_choice(
    st: &AppState,
    caller: &Caller,
    backend: &str,
    connection_id: Option<&str>,
) -> Result<RuntimeChoice> {
    ensure_see(caller)?;
    if Backend::parse(backend) == Some(Backend::State) {
        return Ok(RuntimeChoice { is_state: true, ..RuntimeChoice::default() });
    }
    match live_runtimes(st, caller, connection_id).await {
        Ok(runtimes) => Ok(RuntimeChoice { runtimes, ..RuntimeChoice::default() }),
        Err(e) if matches!(e.kind, Kind::Forbidden | Kind::Internal) => Err(e),
        Err(e) if e.kind == Kind::NotFound => Ok(RuntimeChoice {
            unavailable: Some("This connection does not exist in this organization.".into()),
            ..RuntimeChoice::default()
        }),
        Err(e) => Ok(RuntimeChoice { unavailable: Some(e.public_detail()), ..RuntimeChoice::default() }),
    }
}

/// What the agent form offers besides the agent: connections, and the runtimes of the chosen one.
pub struct FormOptions {
    pub connections: Vec<Connection>,
    pub runtimes: RuntimeChoice,
}

/// The form's options for a backend and connection (the form is for builders and above).
pub async fn form_options(
    st: &AppState,
    caller: &Caller,
    backend: &str,
    connection_id: Option<&str>,
) -> Result<FormOptions> {
    if !caller.role.can_edit_agents() {
        return Err(AppError::forbidden());
    }
    let connections = connections::list(st, caller).await.map_err(AppError::from)?;
    let runtimes = runtime_choice(st, caller, backend, connection_id).await?;
    Ok(FormOptions { connections, runtimes })
}

/// The agent form: the agent (none for a new one) and its options.
pub struct AgentForm {
    pub agent: Option<Agent>,
    /// The backend a new agent starts with: `service` once the organization has a connection.
    pub backend: Backend,
    pub options: FormOptions,
}

pub async fn agent_form(st: &AppState, caller: &Caller, id: Option<&str>) -> Result<AgentForm> {
    if !caller.role.can_edit_agents() {
        return Err(AppError::forbidden());
    }
    let agent = match id {
        Some(id) => Some(get(st, caller, id).await?),
        None => None,
    };
    let backend = match &agent {
        Some(a) => a.backend,
        None if connections::list(st, caller).await.map_err(AppError::from)?.is_empty() => Backend::State,
        None => Backend::Service,
    };
    let connection_id = agent.as_ref().and_then(|a| a.connection_id.clone());
    let options = form_options(st, caller, backend.as_str(), connection_id.as_deref()).await?;
    Ok(AgentForm { agent, backend, options })
}

/// A row of the conversations list.
pub struct ConversationSummary {
    pub id: String,
    pub title: String,
    pub agent_id: String,
    /// None when the agent is not visible (cannot happen while conversations cascade with it).
    pub agent_name: Option<String>,
    pub created_at: i64,
}

/// Newest first: all of the organization's for operators and above, a member's own otherwise.
pub async fn list_conversations(st: &AppState, caller: &Caller) -> Result<Vec<ConversationSummary>> {
    let mut c = st.db.conn().await?;
    let rows = if caller.role.can_see_sandboxes() {
        store::list_conversations(&mut c, &caller.org_id).await?
    } else {
        store::list_conversations_of_member(&mut c, &caller.org_id, &caller.user_id).await?
    };
    let agents = store::list_agents(&mut c, &caller.org_id).await?;
    Ok(rows
        .into_iter()
        .map(|(id, agent_id, title, created_at)| ConversationSummary {
            agent_name: agents.iter().find(|a| a.id == agent_id).map(|a| a.name.clone()),
            id,
            title,
            agent_id,
            created_at,
        })
        .collect())
}

/// The workspace of a conversation's latest run, from our rows only (never a host call).
#[derive(Debug, Clone)]
pub enum LatestWorkspace {
    /// The conversation has no run yet.
    NoRun,
    Known {
        run_id: String,
        state: WorkspaceState,
        scope: Scope,
        /// `sandboxd` or `state`.
        backend: String,
        runtime: Option<String>,
    },
    /// The run gets no workspace (a scope it cannot have, a switched-off connection, …).
    Refused { run_id: String, message: String },
}

/// A conversation as its page shows it.
pub struct ConversationOverview {
    pub conversation: Conversation,
    pub agent: Agent,
    pub member_emails: Vec<String>,
    /// Newest first.
    pub runs: Vec<Run>,
    pub workspace: LatestWorkspace,
}

pub async fn conversation_overview(st: &AppState, caller: &Caller, id: &str) -> Result<ConversationOverview> {
    let conversation = get_conversation(st, caller, id).await?;
    let mut c = st.db.conn().await?;
    let agent =
        store::get_agent(&mut c, &caller.org_id, &conversation.agent_id).await?.ok_or_else(AppError::not_found)?;
    let mut member_emails = Vec::new();
    for u in &conversation.member_user_ids {
        if let Some(e) = store::email_of(&mut c, u).await? {
            member_emails.push(e);
        }
    }
    member_emails.sort();
    let runs = store::list_runs_of_conversation(&mut c, &caller.org_id, id).await?;
    drop(c);
    let workspace = latest_workspace(st, caller, runs.first()).await?;
    Ok(ConversationOverview { conversation, agent, member_emails, runs, workspace })
}

/// The state of the workspace of a conversation's latest run (the fragment the page polls).
pub async fn conversation_workspace(st: &AppState, caller: &Caller, id: &str) -> Result<LatestWorkspace> {
    get_conversation(st, caller, id).await?;
    let mut c = st.db.conn().await?;
    let runs = store::list_runs_of_conversation(&mut c, &caller.org_id, id).await?;
    drop(c);
    latest_workspace(st, caller, runs.first()).await
}

async fn latest_workspace(st: &AppState, caller: &Caller, run: Option<&Run>) -> Result<LatestWorkspace> {
    let Some(run) = run else { return Ok(LatestWorkspace::NoRun) };
    // A member may see the workspaces of the conversations they are in (DESIGN.md §9): the
    // caller passed `get_conversation`, so the state is read for this organization directly.
    match workspaces::state_in_org(st, &caller.org_id, &run.id).await {
        Ok((r, state)) => Ok(LatestWorkspace::Known {
            run_id: run.id.clone(),
            state,
            scope: r.workspace.scope,
            backend: r.workspace.backend.clone(),
            runtime: r.workspace.runtime.clone(),
        }),
        Err(WorkspaceError::Internal(e)) => Err(AppError::internal(e)),
        Err(e) => Ok(LatestWorkspace::Refused { run_id: run.id.clone(), message: AppError::from(e).public_detail() }),
    }
}
