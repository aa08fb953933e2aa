//! Runs: who started one and whom it acts for (what a workspace's scope reads), and — for the
//! workspaces service, which decided the caller's access itself — a run's parts by organization,
//! whether its workspace is opened, and its end.

use serde::Deserialize;

use super::store::{self, NewRun, RunFilter};
use crate::access::Caller;
use crate::agents::conversations::store as conversations;
use crate::agents::error::AgentError;
use crate::agents::manifest::{self, Manifest};
use crate::agents::model::{Agent, Conversation, Paging, Run, RunList, StartedBy};
use crate::agents::service::ensure_see;
use crate::agents::store as agents;
use crate::db::{self, Conn, DbError};
use crate::sandbox::snapshots::starts;
use crate::state::AppState;
use crate::validate::{self, FieldErrors};
use crate::vocabulary::scope::Scope;

type Result<T> = std::result::Result<T, AgentError>;

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = RunBody)]
pub struct RunInput {
    /// The agent to run, of this organization.
    #[serde(default)]
    pub agent_id: String,
    /// The conversation it is a turn of, with the same agent (required by `conversation` and
    /// `channel` scope).
    #[serde(default)]
    pub conversation_id: Option<String>,
    /// `member`, `widget`, `trigger`, `channel` or `api`.
    #[serde(default)]
    pub started_by: String,
    /// The person the run acts for (member, api; a trigger's creator).
    #[serde(default)]
    pub user_id: Option<String>,
    /// A trigger's run acts as the trigger's creator (named in `user_id`; `user` scope needs it).
    #[serde(default)]
    pub trigger_as_creator: bool,
    /// A channel sender's platform id.
    #[serde(default)]
    pub channel_sender: Option<String>,
    /// What this run's workspace starts with when it is new, replacing the agent's manifest
    /// (checked like the agent's; its `env` entries are this run's commands' environment).
    #[serde(default)]
    pub manifest: Option<Manifest>,
    /// A snapshot of this agent's workspaces: the run's workspace starts from it (its files
    /// written at the first operation, instead of the manifest's).
    #[serde(default)]
    pub snapshot_id: Option<String>,
    /// The `session_state` a finished run of this agent returned: this run continues in that
    /// workspace (404 across organizations and agents, and once the workspace is deleted).
    #[serde(default)]
    pub session_state: Option<String>,
}

pub async fn create(st: &AppState, caller: &Caller, input: RunInput) -> Result<Run> {
    ensure_see(caller)?;
    let mut errors = FieldErrors::new();
    let started_by = StartedBy::parse(&input.started_by);
    if started_by.is_none() {
        errors.add("started_by", "Choose member, widget, trigger, channel or api.");
    }
    let mut tx = st.db.begin().await?;
    let agent = agents::get_agent(&mut tx, &caller.org_id, &input.agent_id).await?;
    if agent.is_none() {
        errors.add("agent_id", "This agent does not exist in this organization.");
    }
    let conversation_id = input.conversation_id.clone().filter(|v| !v.is_empty());
    let mut conversation = None;
    if let Some(cid) = &conversation_id {
        match conversations::get(&mut tx, &caller.org_id, cid).await? {
            None => errors.add("conversation_id", "This conversation does not exist in this organization."),
            Some(conv) if Some(&conv.agent_id) != agent.as_ref().map(|a| &a.id) => {
                errors.add("conversation_id", "This conversation belongs to another agent.")
            }
            found => conversation = found,
        }
    }
    let user_id = acting_for(&mut tx, caller, &input, started_by, &mut errors).await?;
    let channel_sender = input.channel_sender.clone().filter(|s| !s.trim().is_empty());
    if let (Some(agent), Some(started_by)) = (&agent, started_by) {
        let has_conversation = conversation_id.is_none() || conversation.is_some();
        if has_conversation {
            check_scope(agent.scope, conversation.as_ref(), started_by, &input, &mut errors);
        }
    }
    if started_by == Some(StartedBy::Channel) && channel_sender.is_none() {
        errors.add("channel_sender", "A channel run names its sender's platform id.");
    }
    if let Some(sender) = &channel_sender {
        validate::platform_id(&mut errors, "channel_sender", sender, "A platform id");
    }
    let manifest = match &input.manifest {
        Some(m) => {
            let m = manifest::check::check(&mut errors, "manifest", m);
            manifest::check::check_secrets(&mut tx, &caller.org_id, &mut errors, "manifest", &m)
                .await
                .map_err(AgentError::Internal)?;
            Some(m.to_json())
        }
        None => None,
    };
    let start = starts::check(
        st,
        &mut tx,
        &caller.org_id,
        agent.as_ref(),
        input.snapshot_id.as_deref(),
        input.session_state.as_deref(),
        &mut errors,
    )
    .await?;
    errors.into_result().map_err(AgentError::Invalid)?;
    let id = db::new_id();
    let new = NewRun {
        id: &id,
        agent_id: &input.agent_id,
        conversation_id: conversation_id.as_deref(),
        started_by: started_by.unwrap_or(StartedBy::Api),
        user_id: user_id.as_deref(),
        trigger_as_creator: input.trigger_as_creator && started_by == Some(StartedBy::Trigger),
        channel_sender: channel_sender.as_deref(),
        manifest,
    };
    store::insert(&mut tx, &caller.org_id, &new, db::now_ms()).await?;
    starts::keep(&mut tx, &caller.org_id, &id, &start, db::now_ms()).await?;
    let run = store::get(&mut tx, &caller.org_id, &id).await?.ok_or(AgentError::NotFound)?;
    tx.commit().await.map_err(DbError::from)?;
    Ok(run)
}

/// A run its agent's scope could never give a workspace is refused when it is created, naming
/// the field that lacks the scope's subject (the same rules as `sandbox::workspaces::scope`).
fn check_scope(
    scope: Scope,
    conversation: Option<&Conversation>,
    started_by: StartedBy,
    input: &RunInput,
    errors: &mut FieldErrors,
) {
    match scope {
        Scope::Run | Scope::Agent => {}
        Scope::Conversation if conversation.is_none() => errors.add(
            "conversation_id",
            "This agent's workspace is per conversation (conversation scope): a run names its conversation.",
        ),
        Scope::Conversation => {}
        Scope::Channel => match conversation {
            None => errors.add(
                "conversation_id",
                "This agent's workspace is per channel (channel scope): a run names a conversation of a channel.",
            ),
            Some(c) if c.channel_key.is_none() => errors.add(
                "conversation_id",
                "This agent's workspace is per channel (channel scope), and this conversation belongs to no channel.",
            ),
            Some(_) => {}
        },
        Scope::User => match started_by {
            StartedBy::Widget => errors.add(
                "started_by",
                "This agent's workspace belongs to a signed-in person (user scope); a widget visitor's run gets none.",
            ),
            StartedBy::Trigger if !input.trigger_as_creator => errors.add(
                "trigger_as_creator",
                "This agent's workspace belongs to a signed-in person (user scope); a trigger's run needs to run as its creator.",
            ),
            _ => {}
        },
    }
}

/// Whom the run acts for: a member or API client names a person of this organization (the caller
/// by default); a trigger may name its creator.
async fn acting_for(
    c: &mut Conn,
    caller: &Caller,
    input: &RunInput,
    started_by: Option<StartedBy>,
    errors: &mut FieldErrors,
) -> Result<Option<String>> {
    let named = input.user_id.clone().filter(|u| !u.is_empty());
    let user_id = match started_by {
        Some(StartedBy::Member | StartedBy::Api) => Some(named.unwrap_or_else(|| caller.user_id.clone())),
        Some(StartedBy::Trigger) => {
            if input.trigger_as_creator && named.is_none() {
                errors.add("user_id", "A trigger that runs as its creator names the creator.");
            }
            named
        }
        _ => return Ok(None),
    };
    if let Some(u) = &user_id {
        if !agents::is_org_member(c, &caller.org_id, u).await? {
            errors.add("user_id", "This person is not a member of this organization.");
        }
    }
    Ok(user_id)
}

/// A run, for operators and above, or for a member of its conversation (as the conversation's
/// page shows it); any other run is `NotFound` to a member, as another organization's.
pub async fn get(st: &AppState, caller: &Caller, id: &str) -> Result<Run> {
    let mut c = st.db.conn().await?;
    let run = store::get(&mut c, &caller.org_id, id).await?.ok_or(AgentError::NotFound)?;
    if caller.role.can_see_sandboxes() {
        return Ok(run);
    }
    let conversation = match &run.conversation_id {
        Some(cid) => conversations::get(&mut c, &caller.org_id, cid).await?,
        None => None,
    };
    match conversation {
        Some(conv) if conv.member_user_ids.contains(&caller.user_id) => Ok(run),
        _ => Err(AgentError::NotFound),
    }
}

/// Which runs to list (each absent one does not narrow), and which page of them.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RunsQuery {
    /// Only this agent's runs.
    #[serde(default)]
    pub agent_id: Option<String>,
    /// Only this conversation's runs.
    #[serde(default)]
    pub conversation_id: Option<String>,
    /// Only runs in this state: `running` or `finished`.
    #[serde(default)]
    pub status: Option<String>,
    /// How many runs to return: 1 to 200 (default 50).
    #[serde(default)]
    pub limit: Option<u32>,
    /// How many of the newest runs to skip (default 0); the previous page's `next_offset`.
    #[serde(default)]
    pub offset: Option<u32>,
}

/// One page of the runs the caller may see, newest first: the organization's for operators and
/// above; for a member, the runs of the conversations they are in (as the conversations' pages
/// show them), nothing else. The filters narrow either.
pub async fn page(st: &AppState, caller: &Caller, q: RunsQuery) -> Result<RunList> {
    let mut errors = FieldErrors::new();
    let (limit, offset) = Paging { limit: q.limit, offset: q.offset }.bounds(&mut errors);
    let status = q.status.as_deref().map(str::trim).filter(|s| !s.is_empty());
    if status.is_some_and(|s| s != "running" && s != "finished") {
        errors.add("status", "Choose running or finished.");
    }
    errors.into_result().map_err(AgentError::Invalid)?;
    let some = |v: &Option<String>| v.as_deref().map(str::trim).filter(|s| !s.is_empty()).map(str::to_string);
    let (agent_id, conversation_id) = (some(&q.agent_id), some(&q.conversation_id));
    let member = (!caller.role.can_see_sandboxes()).then_some(caller.user_id.as_str());
    let filter =
        RunFilter { agent_id: agent_id.as_deref(), conversation_id: conversation_id.as_deref(), status, member };
    let mut c = st.db.conn().await?;
    let mut runs = store::page(&mut c, &caller.org_id, &filter, limit + 1, offset).await?;
    let next_offset = Paging::next_offset(limit, offset, runs.len());
    runs.truncate(limit as usize);
    Ok(RunList { runs, next_offset })
}

// -- for the workspaces service ---------------------------------------------------------------

/// A run with its agent (none once deleted) and its conversation (none for a run without one).
pub struct RunParts {
    pub run: Run,
    pub agent: Option<Agent>,
    pub conversation: Option<Conversation>,
}

/// A run of `org_id` and its parts, if the run exists.
pub async fn parts_in_org(st: &AppState, org_id: &str, run_id: &str) -> Result<Option<RunParts>> {
    let mut c = st.db.conn().await?;
    let Some(run) = store::get(&mut c, org_id, run_id).await? else { return Ok(None) };
    let agent = agents::get_agent(&mut c, org_id, &run.agent_id).await?;
    let conversation = match &run.conversation_id {
        Some(id) => conversations::get(&mut c, org_id, id).await?,
        None => None,
    };
    Ok(Some(RunParts { run, agent, conversation }))
}

/// A run of `org_id`, if it exists.
pub async fn get_in_org(st: &AppState, org_id: &str, run_id: &str) -> Result<Option<Run>> {
    let mut c = st.db.conn().await?;
    Ok(store::get(&mut c, org_id, run_id).await?)
}

/// The e-mail address of the person a workspace belongs to.
pub async fn email_of(st: &AppState, user_id: &str) -> Result<Option<String>> {
    let mut c = st.db.conn().await?;
    Ok(agents::email_of(&mut c, user_id).await?)
}

/// Whether the run's workspace is open for it (the host may close it: the next operation then
/// attaches again).
pub async fn set_workspace_opened(st: &AppState, run_id: &str, opened: bool) -> Result<()> {
    let mut c = st.db.conn().await?;
    Ok(store::set_workspace_opened(&mut c, run_id, opened).await?)
}

/// Marks a running run of `org_id` finished; the run as it is now.
pub async fn finish_in_org(st: &AppState, org_id: &str, run_id: &str) -> Result<Option<Run>> {
    let mut c = st.db.conn().await?;
    store::finish(&mut c, org_id, run_id, db::now_ms()).await?;
    Ok(store::get(&mut c, org_id, run_id).await?)
}

/// Records on a finished run of `org_id` what finishing could not do with its workspace, naming
/// the recovery copy `copy_id` that keeps its files; the run as it is now.
pub async fn set_workspace_error(
    st: &AppState,
    org_id: &str,
    run_id: &str,
    error: &str,
    copy_id: &str,
) -> Result<Option<Run>> {
    let mut c = st.db.conn().await?;
    store::set_workspace_error(&mut c, org_id, run_id, error, copy_id).await?;
    Ok(store::get(&mut c, org_id, run_id).await?)
}
