//! SQL for conversations and their members.

use crate::agents::model::Conversation;
use crate::agents::store::{fetch_all, fetch_optional};
use crate::db::{Conn, DbResult};

/// The values a new conversation is written with.
pub struct NewConversation<'a> {
    pub id: &'a str,
    pub agent_id: &'a str,
    pub title: &'a str,
    pub owner: Option<&'a str>,
    pub channel_key: Option<&'a str>,
}

pub async fn insert(c: &mut Conn, org_id: &str, v: &NewConversation<'_>, now: i64) -> DbResult<()> {
    sqlx::query(
        "INSERT INTO conversations (id, organization_id, agent_id, title, owner_user_id, channel_key, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(v.id)
    .bind(org_id)
    .bind(v.agent_id)
    .bind(v.title)
    .bind(v.owner)
    .bind(v.channel_key)
    .bind(now)
    .execute(c)
    .await?;
    Ok(())
}

pub async fn add_member(c: &mut Conn, conversation_id: &str, user_id: &str) -> DbResult<()> {
    sqlx::query("INSERT INTO conversation_members (conversation_id, user_id) VALUES ($1, $2) ON CONFLICT DO NOTHING")
        .bind(conversation_id)
        .bind(user_id)
        .execute(c)
        .await?;
    Ok(())
}

#[derive(sqlx::FromRow)]
struct ConversationRow {
    id: String,
    agent_id: String,
    title: String,
    owner_user_id: Option<String>,
    channel_key: Option<String>,
    created_at: i64,
}

pub async fn get(c: &mut Conn, org_id: &str, id: &str) -> DbResult<Option<Conversation>> {
    let sql = "SELECT id, agent_id, title, owner_user_id, channel_key, created_at FROM conversations \
               WHERE organization_id = $1 AND id = $2";
    let Some(r) = fetch_optional::<ConversationRow>(&mut *c, sql, &[org_id, id]).await? else { return Ok(None) };
    let sql = "SELECT user_id FROM conversation_members WHERE conversation_id = $1 ORDER BY user_id";
    let members: Vec<(String,)> = fetch_all(c, sql, &[&r.id]).await?;
    Ok(Some(Conversation {
        id: r.id,
        agent_id: r.agent_id,
        title: r.title,
        owner_user_id: r.owner_user_id,
        channel_key: r.channel_key,
        member_user_ids: members.into_iter().map(|(u,)| u).collect(),
        created_at: r.created_at,
    }))
}

/// (id, agent id, title, created at) of a conversations list, newest first.
pub type ConversationLine = (String, String, String, i64);

pub async fn list(c: &mut Conn, org_id: &str) -> DbResult<Vec<ConversationLine>> {
    let sql = "SELECT id, agent_id, title, created_at FROM conversations WHERE organization_id = $1 \
               ORDER BY created_at DESC LIMIT 200";
    fetch_all(c, sql, &[org_id]).await
}

/// The conversations `user_id` is a member of (the shape of [`list`]).
pub async fn list_of_member(c: &mut Conn, org_id: &str, user_id: &str) -> DbResult<Vec<ConversationLine>> {
    let sql = "SELECT c.id, c.agent_id, c.title, c.created_at FROM conversations c \
               JOIN conversation_members m ON m.conversation_id = c.id \
               WHERE c.organization_id = $1 AND m.user_id = $2 ORDER BY c.created_at DESC LIMIT 200";
    fetch_all(c, sql, &[org_id, user_id]).await
}

/// One page of conversations, newest first: the organization's, or only those `member` is in.
/// `limit` and `offset` are numbers the service bounded, written into the SQL as such.
pub async fn page(
    c: &mut Conn,
    org_id: &str,
    member: Option<&str>,
    limit: u32,
    offset: u32,
) -> DbResult<Vec<ConversationLine>> {
    let order = format!("ORDER BY c.created_at DESC, c.id DESC LIMIT {limit} OFFSET {offset}");
    match member {
        None => {
            let sql = format!(
                "SELECT c.id, c.agent_id, c.title, c.created_at FROM conversations c WHERE c.organization_id = $1 {order}"
            );
            fetch_all(c, &sql, &[org_id]).await
        }
        Some(user_id) => {
            let sql = format!(
                "SELECT c.id, c.agent_id, c.title, c.created_at FROM conversations c \
                 JOIN conversation_members m ON m.conversation_id = c.id \
                 WHERE c.organization_id = $1 AND m.user_id = $2 {order}"
            );
            fetch_all(c, &sql, &[org_id, user_id]).await
        }
    }
}

/// Deletes a conversation of `org_id` (its runs and members go with it, by their foreign keys).
pub async fn delete(c: &mut Conn, org_id: &str, id: &str) -> DbResult<u64> {
    Ok(sqlx::query("DELETE FROM conversations WHERE organization_id = $1 AND id = $2")
        .bind(org_id)
        .bind(id)
        .execute(c)
        .await?
        .rows_affected())
}

/// The other conversations of agent `agent_id` in channel `channel_key` (all but `except`), oldest
/// first: the threads that share the channel's workspace.
pub async fn others_in_channel(
    c: &mut Conn,
    org_id: &str,
    agent_id: &str,
    channel_key: &str,
    except: &str,
) -> DbResult<Vec<String>> {
    let sql = "SELECT id FROM conversations WHERE organization_id = $1 AND agent_id = $2 AND channel_key = $3 \
               AND id <> $4 ORDER BY created_at, id";
    let rows: Vec<(String,)> = fetch_all(c, sql, &[org_id, agent_id, channel_key, except]).await?;
    Ok(rows.into_iter().map(|(id,)| id).collect())
}
