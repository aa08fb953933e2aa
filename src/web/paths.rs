//! Every link and form action the pages use; templates never build URLs by hand. A template
//! calls these directly (`{{ crate::web::paths::agent(a.id) }}`); the static files' URLs sit
//! beside the embedded files in `web::assets`. `tests/api/templates.rs` fails on a hand-written
//! URL in a template.

pub const HOME: &str = "/";
pub const SETUP: &str = "/setup";
pub const LOGIN: &str = "/login";
pub const LOGOUT: &str = "/logout";
pub const ORGS_NEW: &str = "/orgs/new";
pub const ORGS: &str = "/orgs";
pub const ORGS_SWITCH: &str = "/orgs/switch";
pub const MEMBERS: &str = "/members";
/// The members page's pending invitations (their actions).
pub const MEMBER_INVITATIONS: &str = "/members/invitations";
/// Invitation links (`/invitations/{code}`) and the invitee's own actions.
pub const INVITATIONS: &str = "/invitations";
pub const TOKENS: &str = "/tokens";
pub const VAULT: &str = "/vault";
pub const AUDIT: &str = "/audit";
/// The signed-in person's own account: password, sign-ins, API tokens.
pub const ACCOUNT: &str = "/account";
/// Choosing a new password (where a one-time password's sign-in is sent).
pub const ACCOUNT_PASSWORD: &str = "/account/password";
pub const ACCOUNT_SESSIONS: &str = "/account/sessions";
pub const ACCOUNT_TOKENS: &str = "/account/tokens";
pub const API_DOCS: &str = "/api/v1/openapi.json";

pub const SANDBOXES: &str = "/sandboxes";
pub const SANDBOXES_NEW: &str = "/sandboxes/new";
pub const SANDBOXES_PROBE: &str = "/sandboxes/probe";
/// The Running tab of the Sandboxes section.
pub const RUNNING: &str = "/sandboxes/running";

pub const AGENTS: &str = "/agents";
pub const AGENTS_NEW: &str = "/agents/new";
pub const AGENTS_RUNTIME_FIELD: &str = "/agents/_runtime_field";
pub const AGENTS_SCOPE_FIELD: &str = "/agents/_scope_field";
pub const CONVERSATIONS: &str = "/conversations";

/// `{collection}/{id}`.
fn item(collection: &str, id: &str) -> String {
    format!("{collection}/{id}")
}

/// `{collection}/{id}/{action}`: an action on one item (a POST, or a page of it).
fn item_action(collection: &str, id: &str, action: &str) -> String {
    format!("{collection}/{id}/{action}")
}

/// Where an item's form posts: the collection for a new one, the item itself for a saved one.
fn save(collection: &str, id: Option<&str>) -> String {
    match id {
        Some(id) => item(collection, id),
        None => collection.to_string(),
    }
}

/// The item paths as a table. `name => COLLECTION` makes `name(id)`, `{COLLECTION}/{id}`;
/// `name => COLLECTION / "action"` makes `name(id)`, `{COLLECTION}/{id}/action`;
/// `name => save COLLECTION` makes `name(Option<id>)`, where that item's form posts.
macro_rules! item_paths {
    () => {};
    ($name:ident => save $collection:ident; $($rest:tt)*) => {
        #[doc = concat!("Where the form of an item of `", stringify!($collection), "` posts.")]
        pub fn $name(id: Option<&str>) -> String {
            save($collection, id)
        }
        item_paths!($($rest)*);
    };
    ($name:ident => $collection:ident / $action:literal; $($rest:tt)*) => {
        #[doc = concat!("`{", stringify!($collection), "}/{id}/", $action, "`")]
        pub fn $name(id: &str) -> String {
            item_action($collection, id, $action)
        }
        item_paths!($($rest)*);
    };
    ($name:ident => $collection:ident; $($rest:tt)*) => {
        #[doc = concat!("`{", stringify!($collection), "}/{id}`")]
        pub fn $name(id: &str) -> String {
            item($collection, id)
        }
        item_paths!($($rest)*);
    };
}

item_paths! {
    member_role => MEMBERS / "role";
    member_delete => MEMBERS / "delete";
    invitation_revoke => MEMBER_INVITATIONS / "revoke";
    invitation => INVITATIONS;
    invitation_accept => INVITATIONS / "accept";
    invitation_decline => INVITATIONS / "decline";
    token_revoke => TOKENS / "revoke";
    account_session_end => ACCOUNT_SESSIONS / "end";
    account_token_revoke => ACCOUNT_TOKENS / "revoke";
    secret_rotate => VAULT / "rotate";
    secret_delete => VAULT / "delete";

    connection => SANDBOXES;
    connection_save => save SANDBOXES;
    connection_edit => SANDBOXES / "edit";
    connection_enable => SANDBOXES / "enable";
    connection_disable => SANDBOXES / "disable";
    connection_make_default => SANDBOXES / "default";
    connection_delete => SANDBOXES / "delete";
    connection_policy => SANDBOXES / "policy";

    agent => AGENTS;
    agent_save => save AGENTS;
    conversation => CONVERSATIONS;
    conversation_workspace => CONVERSATIONS / "workspace";
}

/// The invitation link to give a person: `AGENTICOS_PUBLIC_URL` and `/invitations/{code}`.
pub fn invitation_link(public_url: &url::Url, code: &str) -> String {
    format!("{}{}", public_url.as_str().trim_end_matches('/'), invitation(code))
}

/// A request path as logs may show it: an invitation link's code is replaced by `…`.
pub fn for_log(path: &str) -> std::borrow::Cow<'_, str> {
    match path.strip_prefix(INVITATIONS).and_then(|rest| rest.strip_prefix('/')) {
        Some(code) if !code.is_empty() && !code.contains('/') => format!("{INVITATIONS}/…").into(),
        _ => path.into(),
    }
}

/// A page of the audit log with its filters (`name`, value pairs; empty ones left out).
pub fn audit_page(filters: &[(&str, &str)], page: u32) -> String {
    let mut query = url::form_urlencoded::Serializer::new(String::new());
    for (name, value) in filters.iter().filter(|(_, v)| !v.is_empty()) {
        query.append_pair(name, value);
    }
    query.append_pair("page", &page.to_string());
    format!("{AUDIT}?{}", query.finish())
}

/// The Running tab, sampling memory or not.
pub fn running(usage: bool) -> String {
    if usage {
        format!("{RUNNING}?usage=1")
    } else {
        RUNNING.to_string()
    }
}

/// A session's live activity, entries after `after`.
pub fn session_activity(connection_id: &str, session_id: &str, after: u64) -> String {
    let base = format!("{SANDBOXES}/{connection_id}/sessions/{session_id}/activity");
    if after == 0 {
        base
    } else {
        format!("{base}?after={after}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn item_paths_sit_under_their_collection() {
        assert_eq!(member_role("m1"), "/members/m1/role");
        assert_eq!(member_delete("m1"), "/members/m1/delete");
        assert_eq!(invitation_revoke("i1"), "/members/invitations/i1/revoke");
        assert_eq!(invitation("c0de"), "/invitations/c0de");
        assert_eq!(invitation_accept("i1"), "/invitations/i1/accept");
        assert_eq!(invitation_decline("i1"), "/invitations/i1/decline");
        assert_eq!(token_revoke("t1"), "/tokens/t1/revoke");
        assert_eq!(account_session_end("s1"), "/account/sessions/s1/end");
        assert_eq!(account_token_revoke("t1"), "/account/tokens/t1/revoke");
        assert_eq!(secret_rotate("s1"), "/vault/s1/rotate");
        assert_eq!(secret_delete("s1"), "/vault/s1/delete");
        assert_eq!(audit_page(&[], 2), "/audit?page=2");
        assert_eq!(
            audit_page(&[("actor", "a b&c"), ("event", ""), ("from", "2026-12-02 10:00")], 3),
            "/audit?actor=a+b%26c&from=2026-12-02+10%3A00&page=3"
        );
        assert_eq!(connection("c1"), "/sandboxes/c1");
        assert_eq!(connection_edit("c1"), "/sandboxes/c1/edit");
        assert_eq!(connection_enable("c1"), "/sandboxes/c1/enable");
        assert_eq!(connection_disable("c1"), "/sandboxes/c1/disable");
        assert_eq!(connection_make_default("c1"), "/sandboxes/c1/default");
        assert_eq!(connection_delete("c1"), "/sandboxes/c1/delete");
        assert_eq!(connection_policy("c1"), "/sandboxes/c1/policy");
        assert_eq!(agent("a1"), "/agents/a1");
        assert_eq!(conversation("v1"), "/conversations/v1");
        assert_eq!(conversation_workspace("v1"), "/conversations/v1/workspace");
    }

    #[test]
    fn a_form_posts_to_its_collection_when_new_and_to_its_item_when_saved() {
        assert_eq!(connection_save(None), "/sandboxes");
        assert_eq!(connection_save(Some("c1")), "/sandboxes/c1");
        assert_eq!(agent_save(None), "/agents");
        assert_eq!(agent_save(Some("a1")), "/agents/a1");
    }

    #[test]
    fn an_invitation_link_is_absolute_and_its_code_never_reaches_a_log() {
        let public = url::Url::parse("https://console.example.com").expect("url");
        assert_eq!(invitation_link(&public, "c0de"), "https://console.example.com/invitations/c0de");
        let below = url::Url::parse("https://example.com/console/").expect("url");
        assert_eq!(invitation_link(&below, "c0de"), "https://example.com/console/invitations/c0de");
        assert_eq!(for_log("/invitations/c0de"), "/invitations/…");
        assert_eq!(for_log("/invitations/i1/accept"), "/invitations/i1/accept");
        assert_eq!(for_log("/members"), "/members");
    }

    #[test]
    fn running_paths_carry_their_query_only_when_needed() {
        assert_eq!(running(false), "/sandboxes/running");
        assert_eq!(running(true), "/sandboxes/running?usage=1");
        assert_eq!(session_activity("c1", "s-1", 0), "/sandboxes/c1/sessions/s-1/activity");
        assert_eq!(session_activity("c1", "s-1", 9), "/sandboxes/c1/sessions/s-1/activity?after=9");
    }
}
