//! The policy panel of a connection, read live from the real sandboxd peer.

use reqwest::Method;

use crate::db_test;
use crate::peer::{Peer, PeerOptions};
use crate::support::htmx::attrs;
use crate::support::sandbox_hosts::{caller_of, capped_peer, connect, dead_address};

fn policy(id: &str) -> String {
    format!("/sandboxes/{id}/policy")
}

fn api_policy(id: &str) -> String {
    format!("/api/v1/sandbox-connections/{id}/policy")
}

db_test! {
    async fn the_panel_lists_the_hosts_runtimes_with_catalog_marks_and_the_ceilings(app: TestApp) {
        app.setup_owner().await;
        let peer = capped_peer().await;
        let caller = caller_of(&app.web).await;
        let conn = connect(&app, &caller, "main host", &peer.url, Some(&peer.token)).await;

        let r = app.web.get(&policy(&conn.id)).await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert!(r.select_text("#policy-error").is_none(), "{}", r.body);
        assert_eq!(attrs(&r, "tr[data-alias]", "data-alias"), ["python", "workbench"]);
        assert_eq!(r.select_text("#policy-default-runtime").as_deref(), Some("workbench"));
        assert_eq!(r.select_text("#runtime-workbench .badge-blue").as_deref(), Some("default"));
        assert!(r.select_text("#runtime-python .badge-blue").is_none());
        for alias in ["workbench", "python"] {
            let cell = |c: &str| r.select_text(&format!("#runtime-{alias} .{c}")).unwrap_or_default();
            assert_eq!(cell("catalog"), "offered by this host");
            assert_eq!(cell("memory"), "1g");
            assert_eq!(cell("cpus"), "2");
            assert_eq!(cell("network"), "none");
            assert_eq!(cell("builds"), "no, ready-made image");
        }
        assert!(r.select_text("#runtime-python").is_some_and(|t| t.contains("host python3 in the session workspace")));
        assert!(r.select_text("#policy-not-on-host").is_none(), "the peer offers the whole catalog");
        let ceiling = |k: &str| r.select_text(&format!("#ceiling-{k} .value")).unwrap_or_default();
        assert_eq!(ceiling("max_sessions_per_tenant"), "3");
        assert_eq!(ceiling("max_sessions"), "50");
        assert_eq!(ceiling("max_open_sessions"), "no separate ceiling");
        assert_eq!(ceiling("idle_timeout"), "30 min");
        assert_eq!(ceiling("persist_containers"), "no, each session starts a fresh container");
        assert_eq!(ceiling("workspace_ttl"), "unset: workspaces are kept forever");
        // Each explanation agrees with its value: an unset ceiling is not explained as a set one.
        let hint = |k: &str| r.select_text(&format!("#ceiling-{k} .muted")).unwrap_or_default();
        assert_eq!(hint("max_sessions_per_tenant"), "Opening one more is refused until one of them is released.");
        assert_eq!(hint("max_open_sessions"), "Hibernated sessions are not counted against any ceiling of their own.");
        assert_eq!(hint("workspace_ttl"), "Unused workspace directories are never removed by the host.");
        assert_eq!(hint("container_ttl"), "No container is kept, so none waits to be removed.");
        assert_eq!(r.select_attr(".breadcrumb a", "href").as_deref(), Some("/sandboxes"));
        let warning = r.select_text("#policy-notice-workspace_ttl_unset").expect("the workspace TTL warning");
        assert!(warning.contains("Disk use only grows unless the operator sets a workspace TTL"), "{warning}");
        assert!(r.select_text("#policy-notice-no_runtime").is_none());
        assert!(r.select_text("#policy-notice-version_mismatch").is_none());

        let j = app.web.api(Method::GET, &api_policy(&conn.id), None).await;
        assert_eq!(j.status, 200, "{}", j.body);
        let v = j.json();
        assert_eq!(v["connection"]["id"], conn.id.as_str());
        assert_eq!(v["default_runtime"], "workbench");
        let aliases: Vec<&str> = v["runtimes"].as_array().expect("runtimes").iter().filter_map(|r| r["alias"].as_str()).collect();
        assert_eq!(aliases, ["python", "workbench"]);
        assert!(v["runtimes"].as_array().expect("runtimes").iter().all(|r| r["in_catalog"] == true));
        assert_eq!(v["runtimes"][1]["is_default"], true);
        assert_eq!(v["ceilings"]["max_sessions_per_tenant"], 3);
        assert_eq!(v["ceilings"]["max_sessions"], 50);
        assert_eq!(v["ceilings"]["idle_timeout"], 1800);
        assert!(v["ceilings"]["workspace_ttl"].is_null());
        let codes: Vec<&str> = v["notices"].as_array().expect("notices").iter().filter_map(|n| n["code"].as_str()).collect();
        assert_eq!(codes, ["workspace_ttl_unset"]);
        assert!(!j.body.contains(&peer.token));

        // An operator reaches it from Connections (a row action), as the owner does.
        let operator = app.member_with_role("op@example.com", "operator").await;
        for who in [&app.web, &operator] {
            let list = who.get("/sandboxes").await;
            let href = list.select_attr(&format!("#connection-{} .row-actions a[href$='/policy']", conn.id), "href");
            assert_eq!(href, Some(policy(&conn.id)), "{}", list.body);
        }
        assert!(operator.get("/sandboxes").await.select_text(&format!("#connection-{} .row-actions", conn.id)).is_some_and(|t| !t.contains("Edit")));
        assert_eq!(operator.get(&policy(&conn.id)).await.status, 200);

        // A member may not see it; another organization does not find the connection. Both
        // refusals keep the console's navigation (they are signed in), with their status.
        let member = app.member_with_role("m@example.com", "member").await;
        let r = member.get(&policy(&conn.id)).await;
        assert_eq!(r.status, 403);
        assert!(r.select_text("nav.sidebar-nav").is_some_and(|t| t.contains("Conversations")), "{}", r.body);
        assert_eq!(r.select_text("#error-page .error-code").as_deref(), Some("403"));
        member.api(Method::GET, &api_policy(&conn.id), None).await.problem(403);
        let b = app.other_org_user("b@example.com", "B Corp").await;
        let r = b.get(&policy(&conn.id)).await;
        assert_eq!(r.status, 404);
        assert!(!r.body.contains("main host"));
        assert!(r.select_text("nav.sidebar-nav").is_some(), "{}", r.body);
        assert_eq!(r.select_text("#error-page .error-code").as_deref(), Some("404"));
        b.api(Method::GET, &api_policy(&conn.id), None).await.problem(404);
        assert_eq!(app.web.get(&policy("no-such-connection")).await.status, 404);
        let r = app.web.get("/no-such-page").await;
        assert_eq!(r.status, 404);
        assert!(r.select_text("nav.sidebar-nav").is_some(), "{}", r.body);
        // Signed out: the plain page, same status.
        let r = app.new_client().get("/no-such-page").await;
        assert_eq!(r.status, 404);
        assert!(r.select_text("nav.sidebar-nav").is_none() && r.select_text(".error-code").as_deref() == Some("404"), "{}", r.body);
        let r = app.new_client().get(&policy(&conn.id)).await;
        assert_eq!(r.status, 303, "signed out, a page asks to sign in");
    }
}

db_test! {
    async fn a_host_that_cannot_be_read_is_an_inline_message_never_a_500(app: TestApp) {
        app.setup_owner().await;
        let peer = capped_peer().await;
        let caller = caller_of(&app.web).await;
        let dead = connect(&app, &caller, "dead host", &dead_address(), Some("some-token")).await;
        let refused = connect(&app, &caller, "refusing host", &peer.url, Some("not-the-token")).await;
        let keyless = connect(&app, &caller, "keyless host", &dead_address(), None).await;

        for (conn, words, api_status) in [
            (&dead, "did not answer", 502),
            (&refused, "Credential refused", 502),
            (&keyless, "no credential in the vault", 409),
        ] {
            let r = app.web.get(&policy(&conn.id)).await;
            assert_eq!(r.status, 200, "{}: {}", conn.name, r.body);
            let message = r.select_text("#policy-error").unwrap_or_else(|| panic!("{}: no inline message", conn.name));
            assert!(message.contains(words), "{}: {message}", conn.name);
            assert!(r.select_text("#policy-ceilings").is_none());
            assert!(!r.body.contains("127.0.0.1"), "a host address in the page");
            let p = app.web.api(Method::GET, &api_policy(&conn.id), None).await.problem(api_status);
            assert!(p["detail"].as_str().is_some_and(|d| d.contains(words) && !d.contains("127.0.0.1")), "{p}");
        }
    }
}

db_test! {
    async fn a_host_of_another_release_is_named_on_the_panel(app: TestApp) {
        let peer =
            Peer::start(PeerOptions::default().drop_route("/workspaces/trees")).await.unwrap_or_else(|e| panic!("{e:#}"));
        app.setup_owner().await;
        let caller = caller_of(&app.web).await;
        let conn = connect(&app, &caller, "old host", &peer.url, Some(&peer.token)).await;

        let r = app.web.get(&policy(&conn.id)).await;
        assert_eq!(r.status, 200, "{}", r.body);
        let notice = r.select_text("#policy-notice-version_mismatch").expect("the version notice");
        assert!(notice.contains("does not serve /workspaces/trees"), "{notice}");
        assert!(notice.contains("ghcr.io/vstorm-co/sandboxd:0.2.37"), "{notice}");
        assert!(!notice.contains("127.0.0.1"));
        assert_eq!(attrs(&r, "tr[data-alias]", "data-alias"), ["python", "workbench"], "the policy still shows");
    }
}
