//! Every link and form action the pages use; templates never build URLs by hand. A template
//! calls these directly (`{{ crate::web::paths::agent(a.id) }}`); the static files' URLs sit
//! beside the embedded files in `web::assets`. `tests/api/templates.rs` fails on a hand-written
//! URL in a template.

pub const HOME: &str = "/";
pub const SETUP: &str = "/setup";
pub const LOGIN: &str = "/login";
/// Sign-in, after a password was set with a mailed link (the page says so).
pub const LOGIN_AFTER_RESET: &str = "/login?reset=done";
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
/// Asking for a password-reset link by mail.
pub const FORGOT_PASSWORD: &str = "/forgot-password";
/// A password-reset link (`/reset-password/{token}`) and its form.
pub const RESET_PASSWORD: &str = "/reset-password";
/// Choosing a new password (where a one-time password's sign-in is sent).
pub const ACCOUNT_PASSWORD: &str = "/account/password";
pub const ACCOUNT_SESSIONS: &str = "/account/sessions";
/// Setting up two-factor sign-in (where a member of an organization that requires it is sent).
pub const ACCOUNT_TWO_FACTOR: &str = "/account/two-factor";
/// Switching two-factor sign-in off.
pub const ACCOUNT_TWO_FACTOR_DISABLE: &str = "/account/two-factor/disable";
/// The second step of a sign-in: a code of the app or a recovery code.
pub const LOGIN_TWO_FACTOR: &str = "/login/two-factor";
/// The owners' switch "Require two-factor sign-in for members".
pub const MEMBERS_TWO_FACTOR: &str = "/members/two-factor";
pub const ACCOUNT_TOKENS: &str = "/account/tokens";
/// The OpenAPI document, as JSON.
pub const API_DOCS: &str = "/api/v1/openapi.json";
/// The API reference: the OpenAPI document as a page.
pub const API_REFERENCE: &str = "/api-reference";

pub const SANDBOXES: &str = "/sandboxes";
pub const SANDBOXES_NEW: &str = "/sandboxes/new";
pub const SANDBOXES_PROBE: &str = "/sandboxes/probe";
/// Where the connection dialog posts when its kind changes: the form again, for that kind.
pub const SANDBOXES_KIND: &str = "/sandboxes/kind";
/// The Connections table's poll for each host's health.
pub const SANDBOXES_HEALTH: &str = "/sandboxes/health";
/// The Running tab of the Sandboxes section.
pub const RUNNING: &str = "/sandboxes/running";
/// The Activity tab of the Sandboxes section: the operation log.
pub const OPERATIONS: &str = "/sandboxes/activity";
/// The Activity tab showing failed operations only.
pub const OPERATIONS_FAILED: &str = "/sandboxes/activity?failed_only=true";
/// The Activity tab's poll for rows newer than the first page's.
pub const OPERATIONS_NEW: &str = "/sandboxes/activity/new";
/// The Activity tab's export (CSV or NDJSON) of its filters.
pub const OPERATIONS_EXPORT: &str = "/sandboxes/activity/export";

pub const AGENTS: &str = "/agents";
pub const AGENTS_NEW: &str = "/agents/new";
pub const AGENTS_RUNTIME_FIELD: &str = "/agents/_runtime_field";
pub const AGENTS_SCOPE_FIELD: &str = "/agents/_scope_field";
pub const CONVERSATIONS: &str = "/conversations";
pub const DOCUMENTS: &str = "/documents";
/// `/documents/workspaces/{id}`: one workspace's files.
pub const DOCUMENT_WORKSPACES: &str = "/documents/workspaces";

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
    member_password_reset => MEMBERS / "password-reset";
    invitation_revoke => MEMBER_INVITATIONS / "revoke";
    invitation => INVITATIONS;
    invitation_accept => INVITATIONS / "accept";
    invitation_decline => INVITATIONS / "decline";
    password_reset => RESET_PASSWORD;
    token_revoke => TOKENS / "revoke";
    account_session_end => ACCOUNT_SESSIONS / "end";
    account_token_revoke => ACCOUNT_TOKENS / "revoke";
    secret_rotate => VAULT / "rotate";
    secret_bind => VAULT / "bind";
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
    agent_delete => AGENTS / "delete";
    conversation => CONVERSATIONS;
    conversation_workspace => CONVERSATIONS / "workspace";
    conversation_files => CONVERSATIONS / "files";
    conversation_delete => CONVERSATIONS / "delete";
    document_workspace => DOCUMENT_WORKSPACES;
    document_workspace_snapshots => DOCUMENT_WORKSPACES / "snapshots";
}

/// `/documents` with a search, a "who" filter and a page cursor (empty ones left out).
pub fn documents(q: &str, who: &str, sort: &str, kind: &str, cursor: Option<&str>) -> String {
    let mut query = url::form_urlencoded::Serializer::new(String::new());
    if !q.is_empty() {
        query.append_pair("q", q);
    }
    if !who.is_empty() && who != "anyone" {
        query.append_pair("who", who);
    }
    if !kind.is_empty() {
        query.append_pair("type", kind);
    }
    if !sort.is_empty() && sort != "newest" {
        query.append_pair("sort", sort);
    }
    if let Some(c) = cursor {
        query.append_pair("cursor", c);
    }
    let query = query.finish();
    if query.is_empty() {
        DOCUMENTS.to_string()
    } else {
        format!("{DOCUMENTS}?{query}")
    }
}

/// A workspace's page with one file open in its pane (a text's page from line `offset`).
pub fn document_preview(workspace_id: &str, path: &str, offset: u64) -> String {
    let mut query = url::form_urlencoded::Serializer::new(String::new());
    query.append_pair("path", path);
    if offset > 0 {
        query.append_pair("offset", &offset.to_string());
    }
    format!("{DOCUMENT_WORKSPACES}/{workspace_id}?{}", query.finish())
}

/// A file's bytes, served by us (`download`: always an attachment).
pub fn document_file(workspace_id: &str, path: &str, download: bool) -> String {
    let mut query = url::form_urlencoded::Serializer::new(String::new());
    query.append_pair("path", path);
    if download {
        query.append_pair("download", "true");
    }
    format!("{DOCUMENT_WORKSPACES}/{workspace_id}/file?{}", query.finish())
}

/// `POST`: a new run that starts from one of a workspace's snapshots (the workspace's page).
pub fn document_workspace_snapshot_restore(workspace_id: &str, snapshot_id: &str) -> String {
    format!("{DOCUMENT_WORKSPACES}/{workspace_id}/snapshots/{snapshot_id}/restore")
}

/// A snapshot's archive (`.tar.gz`), downloaded after the same check as the workspace's files.
pub fn snapshot_archive(snapshot_id: &str) -> String {
    format!("/api/v1/snapshots/{snapshot_id}/archive")
}

/// The invitation link to give a person: `AGENTICOS_PUBLIC_URL` and `/invitations/{code}`.
pub fn invitation_link(public_url: &url::Url, code: &str) -> String {
    format!("{}{}", public_url.as_str().trim_end_matches('/'), invitation(code))
}

/// A request path as logs may show it: an invitation link's code is replaced by `…`.
pub fn for_log(path: &str) -> std::borrow::Cow<'_, str> {
    for prefix in [INVITATIONS, RESET_PASSWORD] {
        if let Some(code) = path.strip_prefix(prefix).and_then(|rest| rest.strip_prefix('/')) {
            if !code.is_empty() && !code.contains('/') {
                return format!("{prefix}/…").into();
            }
        }
    }
    path.into()
}

/// A password-reset link as the mail gives it: on the console's public address.
pub fn password_reset_link(public_url: &url::Url, token: &str) -> String {
    format!("{}{}", public_url.as_str().trim_end_matches('/'), password_reset(token))
}

/// A vault secret's rotate field on the Vault page (what fixes a key a host refused).
pub fn secret_rotate_field(id: &str) -> String {
    format!("{VAULT}#rotate-{id}")
}

/// A connection's row in the Connections table.
pub fn connection_row(id: &str) -> String {
    format!("{SANDBOXES}#connection-{id}")
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

/// The Activity tab (`base` is [`OPERATIONS`] or [`OPERATIONS_NEW`]) with these filters and,
/// if given, a cursor.
pub fn operations_with(base: &str, filters: &[(&'static str, String)], cursor: Option<&str>) -> String {
    let mut query = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in filters {
        query.append_pair(k, v);
    }
    if let Some(c) = cursor {
        query.append_pair("cursor", c);
    }
    let q = query.finish();
    if q.is_empty() {
        base.to_string()
    } else {
        format!("{base}?{q}")
    }
}

/// The Activity tab filtered to one host session (by its key).
pub fn operations_of_session(session_key: &str) -> String {
    operations_with(OPERATIONS, &[("session_key", session_key.to_string())], None)
}

/// The Activity tab filtered to one workspace (the Running tab's sessions).
pub fn operations_of_workspace(workspace_id: &str) -> String {
    operations_with(OPERATIONS, &[("workspace_id", workspace_id.to_string())], None)
}

/// The Activity tab filtered to one conversation's runs.
pub fn operations_of_conversation(conversation_id: &str) -> String {
    operations_with(OPERATIONS, &[("conversation_id", conversation_id.to_string())], None)
}

/// The Running tab, sampling memory or not.
pub fn running(usage: bool) -> String {
    if usage {
        format!("{RUNNING}?usage=1")
    } else {
        RUNNING.to_string()
    }
}

/// `/sandboxes/{connection_id}/sessions/{session_id}/{action}`: a page or action of one host session.
fn session(connection_id: &str, session_id: &str, action: &str) -> String {
    format!("{SANDBOXES}/{connection_id}/sessions/{session_id}/{action}")
}

/// A session's live activity, entries after `after`.
pub fn session_activity(connection_id: &str, session_id: &str, after: u64) -> String {
    let base = session(connection_id, session_id, "activity");
    if after == 0 {
        base
    } else {
        format!("{base}?after={after}")
    }
}

/// Where "Close" posts: the host closes the session and keeps its files.
pub fn session_close(connection_id: &str, session_id: &str) -> String {
    session(connection_id, session_id, "close")
}

/// "Close and delete files": its confirmation (GET) and the action (POST).
pub fn session_delete(connection_id: &str, session_id: &str) -> String {
    session(connection_id, session_id, "delete")
}

/// The sign-in page that returns to `next` (a same-site path, checked by [`safe_next`]) once
/// signed in; the plain sign-in page when `next` is none or not safe.
pub fn login_then(next: Option<&str>) -> String {
    match next.and_then(safe_next) {
        Some(n) if n != HOME => {
            format!("{LOGIN}?next={}", url::form_urlencoded::byte_serialize(n.as_bytes()).collect::<String>())
        }
        _ => LOGIN.to_string(),
    }
}

/// The second step of a sign-in, returning to `next` (already checked) once done.
pub fn login_two_factor_then(next: &str) -> String {
    format!("{LOGIN_TWO_FACTOR}?next={}", url::form_urlencoded::byte_serialize(next.as_bytes()).collect::<String>())
}

/// `next` when it is a path on this site: it starts with one `/` (not `//`, which a browser
/// reads as another host), carries no backslash (which browsers read as `/`) and no control,
/// whitespace or invisible (bidi, zero-width) character, and is not absurdly long. Anything else is none: sign-in then goes home.
pub fn safe_next(next: &str) -> Option<&str> {
    let ok = next.starts_with('/')
        && !next.starts_with("//")
        && next.len() <= 2048
        && !next.chars().any(|c| c == '\\' || c.is_control() || c.is_whitespace() || crate::validate::is_invisible(c));
    ok.then_some(next)
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
        assert_eq!(secret_rotate_field("s1"), "/vault#rotate-s1");
        assert_eq!(connection_row("c1"), "/sandboxes#connection-c1");
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
        assert_eq!(agent_delete("a1"), "/agents/a1/delete");
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
        assert_eq!(for_log("/reset-password/s3cret-T0ken"), "/reset-password/…");
    }

    #[test]
    fn operation_log_paths_carry_their_filters() {
        assert_eq!(operations_with(OPERATIONS, &[], None), "/sandboxes/activity");
        assert_eq!(operations_of_session("a b&c"), "/sandboxes/activity?session_key=a+b%26c");
        assert_eq!(
            operations_with(OPERATIONS_NEW, &[("op", "read".into()), ("op", "ls".into())], Some("Y3U")),
            "/sandboxes/activity/new?op=read&op=ls&cursor=Y3U"
        );
    }

    #[test]
    fn running_paths_carry_their_query_only_when_needed() {
        assert_eq!(running(false), "/sandboxes/running");
        assert_eq!(running(true), "/sandboxes/running?usage=1");
        assert_eq!(session_activity("c1", "s-1", 0), "/sandboxes/c1/sessions/s-1/activity");
        assert_eq!(session_activity("c1", "s-1", 9), "/sandboxes/c1/sessions/s-1/activity?after=9");
        assert_eq!(session_close("c1", "s-1"), "/sandboxes/c1/sessions/s-1/close");
        assert_eq!(session_delete("c1", "s-1"), "/sandboxes/c1/sessions/s-1/delete");
    }

    #[test]
    fn only_a_same_site_path_is_a_place_to_return_to_after_sign_in() {
        for ok in ["/", "/members", "/sandboxes/running?usage=1", "/conversations/abc#x", "/a/b%2F%2Fc"] {
            assert_eq!(safe_next(ok), Some(ok), "{ok}");
        }
        for bad in [
            "",
            "members",
            "//evil.example",
            "//evil.example/members",
            "https://evil.example/",
            "http:/evil.example",
            "javascript:alert(1)",
            "/\\evil.example",
            "\\\\evil.example",
            "/members\\..",
            "/\tevil",
            "/members\r\nSet-Cookie: a=b",
            "/a b",
            "/\u{0}",
            "/\u{7f}",
            "/\u{85}x",
            "/\u{2028}x",
            "/\u{202e}x",
        ] {
            assert_eq!(safe_next(bad), None, "{bad:?}");
        }
        assert_eq!(safe_next(&format!("/{}", "a".repeat(3000))), None);
        assert_eq!(login_then(Some("/members")), "/login?next=%2Fmembers");
        assert_eq!(login_then(Some("/sandboxes/running?usage=1")), "/login?next=%2Fsandboxes%2Frunning%3Fusage%3D1");
        assert_eq!(login_then(Some("//evil.example")), "/login");
        assert_eq!(login_then(Some("/")), "/login");
        assert_eq!(login_then(None), "/login");
    }
}
