//! Agents and their sandbox settings, and what the agent form offers. Saving an agent publishes
//! it, so incoherent settings are refused with a clear message.

pub use super::check::live_runtimes;
use super::check::{check, org_connections, AgentInput};
use super::error::AgentError;
use super::model::{Agent, AgentSummary, Backend};
use super::store;
use crate::access::Caller;
use crate::audit::service as audit;
use crate::db::{self, DbError};
use crate::sandbox::connections::error::ConnectionError;
use crate::sandbox::connections::model::Connection;
use crate::sandbox::snapshots::model::Settings as SnapshotSettings;
use crate::sandbox::snapshots::settings as snapshot_settings;
use crate::state::AppState;
use crate::validate::NameTaken as _;

type Result<T> = std::result::Result<T, AgentError>;

pub(super) fn ensure_see(caller: &Caller) -> Result<()> {
    caller.role.can_see_sandboxes().then_some(()).ok_or(AgentError::Forbidden)
}

fn ensure_edit(caller: &Caller) -> Result<()> {
    caller.role.can_edit_agents().then_some(()).ok_or(AgentError::Forbidden)
}

/// The organization's agents as the agents page lists them (operators and above): a summary,
/// without the contents of their skills and manifest files.
pub async fn list(st: &AppState, caller: &Caller) -> Result<Vec<AgentSummary>> {
    ensure_see(caller)?;
    let mut c = st.db.conn().await?;
    Ok(store::list_agents(&mut c, &caller.org_id).await?)
}

/// An agent's settings (skills included), for whoever may see the agents list: operators and
/// above, as the agents page. A member is refused like the list (403).
pub async fn get(st: &AppState, caller: &Caller, id: &str) -> Result<Agent> {
    ensure_see(caller)?;
    let mut c = st.db.conn().await?;
    store::get_agent(&mut c, &caller.org_id, id).await?.ok_or(AgentError::NotFound)
}

/// Saves a new agent, with its snapshot settings when given (the form's), in one transaction.
pub async fn create(
    st: &AppState,
    caller: &Caller,
    input: AgentInput,
    settings: Option<&SnapshotSettings>,
) -> Result<Agent> {
    ensure_edit(caller)?;
    let checked = check(st, caller, &input).await?;
    let id = db::new_id();
    let mut tx = st.db.begin().await?;
    let values = checked.values();
    store::insert_agent(&mut tx, &id, &caller.org_id, &values, &caller.user_id, db::now_ms())
        .await
        .or_name_taken("An agent", AgentError::Invalid)?;
    save_settings(&mut tx, caller, &id, settings).await?;
    let detail = format!("{} scope", checked.scope.as_str());
    audit::record(&mut tx, &caller.org_id, &caller.actor(), "agent.created", &checked.name, &detail).await?;
    let agent = store::get_agent(&mut tx, &caller.org_id, &id).await?.ok_or(AgentError::NotFound)?;
    tx.commit().await.map_err(DbError::from)?;
    Ok(agent)
}

/// Saves an agent's settings, with its snapshot settings when given (the form's), in one
/// transaction.
pub async fn update(
    st: &AppState,
    caller: &Caller,
    id: &str,
    input: AgentInput,
    settings: Option<&SnapshotSettings>,
) -> Result<Agent> {
    ensure_edit(caller)?;
    get(st, caller, id).await?;
    let checked = check(st, caller, &input).await?;
    let mut tx = st.db.begin().await?;
    store::update_agent(&mut tx, &caller.org_id, id, &checked.values(), db::now_ms())
        .await
        .or_name_taken("An agent", AgentError::Invalid)?;
    save_settings(&mut tx, caller, id, settings).await?;
    let action = "agent.sandbox_settings_changed";
    audit::record(&mut tx, &caller.org_id, &caller.actor(), action, &checked.name, "").await?;
    let agent = store::get_agent(&mut tx, &caller.org_id, id).await?.ok_or(AgentError::NotFound)?;
    tx.commit().await.map_err(DbError::from)?;
    Ok(agent)
}

/// The agent's snapshot settings, when the action carries them, in its transaction.
async fn save_settings(c: &mut db::Conn, caller: &Caller, id: &str, settings: Option<&SnapshotSettings>) -> Result<()> {
    if let Some(s) = settings {
        snapshot_settings::save_in(c, &caller.org_id, id, s).await?;
    }
    Ok(())
}

// -- what the console pages show ------------------------------------------------------------

/// The agents table: the organization's agents and connections (to name each agent's).
pub struct Listing {
    pub agents: Vec<AgentSummary>,
    pub connections: Vec<Connection>,
}

pub async fn listing(st: &AppState, caller: &Caller) -> Result<Listing> {
    let agents = list(st, caller).await?;
    let connections = org_connections(st, caller).await?;
    Ok(Listing { agents, connections })
}

/// What the *Runtime* field can offer for a backend and connection.
#[derive(Debug, Default)]
pub struct RuntimeChoice {
    /// What the host allows right now (read live).
    pub runtimes: Vec<String>,
    /// Why the host could not be asked (only "connection default" then), in the connection's
    /// own words once the page reads it.
    pub unavailable: Option<ConnectionError>,
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
    let unavailable = match live_runtimes(st, caller, connection_id).await {
        Ok(runtimes) => return Ok(RuntimeChoice { runtimes, ..RuntimeChoice::default() }),
        Err(ConnectionError::Forbidden) => return Err(AgentError::Forbidden),
        Err(ConnectionError::Internal(e)) => return Err(AgentError::Internal(e)),
        Err(ConnectionError::NotFound) => ConnectionError::Unknown,
        Err(e) => e,
    };
    Ok(RuntimeChoice { unavailable: Some(unavailable), ..RuntimeChoice::default() })
}

/// What the agent form offers besides the agent: connections, and the runtimes of the chosen one.
pub struct FormOptions {
    pub connections: Vec<Connection>,
    pub runtimes: RuntimeChoice,
    /// The vault secrets a manifest's environment variable may take (purpose `other`); none for
    /// a role that may not manage the vault.
    pub secrets: Vec<crate::vault::model::Secret>,
}

/// The form's options for a backend and connection (the form is for builders and above).
pub async fn form_options(
    st: &AppState,
    caller: &Caller,
    backend: &str,
    connection_id: Option<&str>,
) -> Result<FormOptions> {
    ensure_edit(caller)?;
    let connections = org_connections(st, caller).await?;
    let runtimes = runtime_choice(st, caller, backend, connection_id).await?;
    let secrets = crate::vault::service::list(st, caller).await.unwrap_or_default();
    let secrets = super::manifest::check::env_secrets(secrets);
    Ok(FormOptions { connections, runtimes, secrets })
}

/// The agent form: the agent (none for a new one) and its options.
pub struct AgentForm {
    pub agent: Option<Agent>,
    /// The backend a new agent starts with: `service` once the organization has a connection.
    pub backend: Backend,
    pub options: FormOptions,
}

pub async fn agent_form(st: &AppState, caller: &Caller, id: Option<&str>) -> Result<AgentForm> {
    ensure_edit(caller)?;
    let agent = match id {
        Some(id) => Some(get(st, caller, id).await?),
        None => None,
    };
    let backend = match &agent {
        Some(a) => a.backend,
        None if org_connections(st, caller).await?.is_empty() => Backend::State,
        None => Backend::Service,
    };
    let connection_id = agent.as_ref().and_then(|a| a.connection_id.clone());
    let options = form_options(st, caller, backend.as_str(), connection_id.as_deref()).await?;
    Ok(AgentForm { agent, backend, options })
}

/// Deletes agent `id` in the caller's transaction (builders and above): its conversations and
/// runs go by their foreign keys; whoever calls this removed its workspaces first. Returns it.
pub async fn delete_in(c: &mut db::Conn, caller: &Caller, id: &str) -> Result<Agent> {
    ensure_edit(caller)?;
    let agent = store::get_agent(&mut *c, &caller.org_id, id).await?.ok_or(AgentError::NotFound)?;
    store::delete_agent(c, &caller.org_id, id).await?;
    Ok(agent)
}
