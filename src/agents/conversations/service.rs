//! Conversations: created by a person of the organization and shared with members; operators and
//! above see them all, a member the ones they are in.

use serde::Deserialize;

use super::store::{self, NewConversation};
use crate::access::Caller;
use crate::agents::error::AgentError;
pub use crate::agents::model::ConversationSummary;
use crate::agents::model::{Agent, Conversation, ConversationList, Paging, Run};
use crate::agents::runs::store as runs;
use crate::agents::service::ensure_see;
use crate::agents::store as agents;
use crate::db::{self, Conn, DbError};
use crate::state::AppState;
use crate::validate::{self, FieldErrors};

type Result<T> = std::result::Result<T, AgentError>;

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = ConversationBody)]
pub struct ConversationInput {
    /// The agent it is with, of this organization.
    #[serde(default)]
    pub agent_id: String,
    /// 1 to 100 characters; no control or invisible characters.
    #[serde(default)]
    pub title: String,
    /// Members it is shared with (the creator is its owner and a member).
    #[serde(default)]
    pub member_user_ids: Vec<String>,
    /// The channel it belongs to (for `channel` scope).
    #[serde(default)]
    pub channel_key: Option<String>,
}

pub async fn create(st: &AppState, caller: &Caller, input: ConversationInput) -> Result<Conversation> {
    ensure_see(caller)?;
    let mut errors = FieldErrors::new();
    let title = validate::name(&mut errors, "title", &input.title, "title");
    let mut tx = st.db.begin().await?;
    if agents::get_agent(&mut tx, &caller.org_id, &input.agent_id).await?.is_none() {
        errors.add("agent_id", "This agent does not exist in this organization.");
    }
    for u in &input.member_user_ids {
        if !agents::is_org_member(&mut tx, &caller.org_id, u).await? {
            errors.add("member_user_ids", format!("{u} is not a member of this organization."));
        }
    }
    let channel_key = input.channel_key.map(|k| k.trim().to_string()).filter(|k| !k.is_empty());
    if let Some(k) = &channel_key {
        validate::platform_id(&mut errors, "channel_key", k, "A channel key");
    }
    errors.into_result().map_err(AgentError::Invalid)?;
    let id = db::new_id();
    let new = NewConversation {
        id: &id,
        agent_id: &input.agent_id,
        title: &title,
        owner: Some(&caller.user_id),
        channel_key: channel_key.as_deref(),
    };
    store::insert(&mut tx, &caller.org_id, &new, db::now_ms()).await?;
    for u in std::iter::once(&caller.user_id).chain(&input.member_user_ids) {
        store::add_member(&mut tx, &id, u).await?;
    }
    let conversation = store::get(&mut tx, &caller.org_id, &id).await?.ok_or(AgentError::NotFound)?;
    tx.commit().await.map_err(DbError::from)?;
    Ok(conversation)
}

/// A conversation of the organization, for operators and above or a member of it.
pub async fn get(st: &AppState, caller: &Caller, id: &str) -> Result<Conversation> {
    let mut c = st.db.conn().await?;
    let conversation = store::get(&mut c, &caller.org_id, id).await?.ok_or(AgentError::NotFound)?;
    if !caller.role.can_see_sandboxes() && !conversation.member_user_ids.contains(&caller.user_id) {
        return Err(AgentError::NotFound);
    }
    Ok(conversation)
}

/// Newest first: all of the organization's for operators and above, a member's own otherwise.
pub async fn list(st: &AppState, caller: &Caller) -> Result<Vec<ConversationSummary>> {
    let mut c = st.db.conn().await?;
    let rows = if caller.role.can_see_sandboxes() {
        store::list(&mut c, &caller.org_id).await?
    } else {
        store::list_of_member(&mut c, &caller.org_id, &caller.user_id).await?
    };
    summaries(&mut c, &caller.org_id, rows).await
}

async fn summaries(c: &mut Conn, org_id: &str, rows: Vec<store::ConversationLine>) -> Result<Vec<ConversationSummary>> {
    let agents = agents::list_agents(c, org_id).await?;
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

/// One page of the conversations the caller may see (as [`list`]: all of the organization's for
/// operators and above, only those a member is in otherwise), newest first.
pub async fn page(st: &AppState, caller: &Caller, paging: Paging) -> Result<ConversationList> {
    let mut errors = FieldErrors::new();
    let (limit, offset) = paging.bounds(&mut errors);
    errors.into_result().map_err(AgentError::Invalid)?;
    let member = (!caller.role.can_see_sandboxes()).then_some(caller.user_id.as_str());
    let mut c = st.db.conn().await?;
    let mut rows = store::page(&mut c, &caller.org_id, member, limit + 1, offset).await?;
    let next_offset = Paging::next_offset(limit, offset, rows.len());
    rows.truncate(limit as usize);
    Ok(ConversationList { conversations: summaries(&mut c, &caller.org_id, rows).await?, next_offset })
}

/// A conversation as its page shows it (its workspace comes from the workspaces service).
pub struct ConversationOverview {
    pub conversation: Conversation,
    pub agent: Agent,
    pub member_emails: Vec<String>,
    /// Newest first.
    pub runs: Vec<Run>,
}

pub async fn overview(st: &AppState, caller: &Caller, id: &str) -> Result<ConversationOverview> {
    let conversation = get(st, caller, id).await?;
    let mut c = st.db.conn().await?;
    let agent = agents::get_agent(&mut c, &caller.org_id, &conversation.agent_id).await?.ok_or(AgentError::NotFound)?;
    let mut member_emails = Vec::new();
    for u in &conversation.member_user_ids {
        member_emails.extend(agents::email_of(&mut c, u).await?);
    }
    member_emails.sort();
    let runs = runs::list_of_conversation(&mut c, &caller.org_id, id).await?;
    Ok(ConversationOverview { conversation, agent, member_emails, runs })
}

/// The conversation's runs, newest first (for someone who may see the conversation): the first
/// is its latest, and their count is its number.
pub async fn runs_of(st: &AppState, caller: &Caller, id: &str) -> Result<Vec<Run>> {
    get(st, caller, id).await?;
    let mut c = st.db.conn().await?;
    Ok(runs::list_of_conversation(&mut c, &caller.org_id, id).await?)
}

/// Deletes conversation `id` of `org_id` in the caller's transaction (its runs and members go by
/// their foreign keys); whoever calls this decided the access and removed its workspaces first.
pub async fn delete_in(c: &mut Conn, org_id: &str, id: &str) -> Result<()> {
    match store::delete(c, org_id, id).await? {
        0 => Err(AgentError::NotFound),
        _ => Ok(()),
    }
}

/// Conversation `id` of `org_id` in the caller's transaction (access decided by the caller).
pub async fn get_in(c: &mut Conn, org_id: &str, id: &str) -> Result<Conversation> {
    store::get(c, org_id, id).await?.ok_or(AgentError::NotFound)
}

/// The other conversations of `conversation`'s channel (same agent, same channel key), oldest
/// first, in the caller's transaction; none for a conversation of no channel.
pub async fn others_in_channel_in(c: &mut Conn, org_id: &str, conversation: &Conversation) -> Result<Vec<String>> {
    let Some(key) = conversation.channel_key.as_deref() else { return Ok(Vec::new()) };
    Ok(store::others_in_channel(c, org_id, &conversation.agent_id, key, &conversation.id).await?)
}
