//! The Running tab, a session's live activity and the dashboard's capacity cards, against the real
//! sandboxd peer: only this organization's sessions (sandboxd tenant = organization id) ever show.

use agenticos::sandbox::connections::model::Connection;
use agenticos::sandbox::connections::service as connections;
use agenticos::sandbox::hosts::sandboxd::client::RunRequest;
use reqwest::Method;

use crate::db_test;
use crate::helpers::Resp;
use crate::support::htmx::{attrs, hx_get};
use crate::support::sandbox_hosts::{caller_of, capped_peer, connect, dead_address, host, open, unique};

/// A fragment of table rows, parsed where rows belong (as htmx's template parsing does).
fn in_table(r: Resp) -> Resp {
    Resp { body: format!("<table><tbody>{}</tbody></table>", r.body), ..r }
}

fn activity(conn: &Connection, session: &str) -> String {
    format!("/sandboxes/{}/sessions/{session}/activity", conn.id)
}

// ---------------------------------------------------------------------------------------------

db_test! {
    async fn only_this_organizations_sessions_show_and_another_tenants_never_do(app: TestApp) {
        app.setup_owner().await;
        let peer = capped_peer().await;
        let caller = caller_of(&app.web).await;
        let conn = connect(&app, &caller, "main host", &peer.url, Some(&peer.token)).await;

        let r = app.web.get("/sandboxes/running").await;
        assert_eq!(r.status, 200, "{}", r.body);
        let empty = r.select_text("#running-empty").expect("an empty state");
        assert!(empty.contains("No sandbox sessions are running for Acme"), "{empty}");

        let host = host(peer);
        let (ours, theirs) = (unique("ours"), unique("theirs"));
        open(&host, &ours, &caller.org_id).await;
        open(&host, &theirs, &unique("another-tenant")).await;

        let r = app.web.get("/sandboxes/running").await;
        assert_eq!(r.status, 200);
        assert_eq!(attrs(&r, "tr.session", "data-session-id"), [ours.as_str()]);
        assert!(!r.body.contains(&theirs), "another tenant's session is listed");
        assert!(r.select_text("#running-empty").is_none());
        let row = format!("tr[data-session-id=\"{ours}\"]");
        assert_eq!(r.select_text(&format!("{row} .state")).as_deref(), Some("running"));
        assert_eq!(r.select_text(&format!("{row} .runtime")).as_deref(), Some("workbench"));
        let closes = r.select_text(&format!("{row} .closes-in")).expect("closes if idle in");
        assert!(closes.ends_with("min") || closes.ends_with('s'), "closes if idle in {closes:?}");
        // Times wrap between their parts only ("29 min" / "58 s"), never inside one: at 1280 px
        // an idle time once took three lines.
        for cell in ["idle", "closes-in"] {
            let parts = r.select_all(&format!("{row} td.{cell} span.nowrap"));
            assert!(!parts.is_empty() && parts.iter().all(|p| p.split(' ').count() == 2), "{cell}: {parts:?}");
        }
        assert!(r.select_all(&format!("{row} .memory")).is_empty(), "memory shown without sampling");
        let counts = r.select_text(&format!("#host-{} .host-counts", conn.id)).expect("counts");
        let open_on_host: u64 = counts
            .strip_prefix("1 of this organization's sessions (at most 3); host: ")
            .and_then(|rest| rest.strip_suffix(" open of 50"))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("counts read {counts:?}"));
        assert!(open_on_host >= 2, "{counts}");
        assert_eq!(r.select_attr("#running-sessions", "hx-get").as_deref(), Some("/sandboxes/running"));
        assert_eq!(r.select_attr("#running-sessions", "hx-trigger").as_deref(), Some("every 10s"));
        assert_eq!(r.select_attr(&format!("{row} a.activity"), "href"), Some(activity(&conn, &ours)));
        // A session no workspace of this organization names says so, the key on hover.
        assert_eq!(r.select_text(&format!("{row} .agent-name")).as_deref(), Some("no workspace of this organization"));
        assert_eq!(r.select_attr(&format!("{row} .agent"), "title"), Some(format!("Session key: {ours}")));

        // The 10-second poll gets the fragment alone, with the same rows.
        let f = hx_get(&app.web, "/sandboxes/running").await;
        assert_eq!(f.status, 200);
        assert!(!f.body.contains("<html") && !f.body.contains("sidebar"), "a whole page: {}", f.body);
        assert!(f.body.trim_start().starts_with("<div id=\"running-sessions\""));
        assert_eq!(attrs(&f, "tr.session", "data-session-id"), [ours.as_str()]);
        assert!(!f.body.contains(&theirs));
        assert_eq!(f.header("vary").as_deref(), Some("HX-Request"));

        // "Sample memory" asks the host for usage and keeps asking on every poll.
        let u = app.web.get("/sandboxes/running?usage=1").await;
        assert!(u.select_attr("#running-usage", "checked").is_some());
        // The test host measures no memory (it answers 0): the cell says so, never "0 B".
        assert_eq!(u.select_all(&format!("{row} .memory")), ["not reported"]);
        assert_eq!(u.select_attr("#running-sessions", "hx-get").as_deref(), Some("/sandboxes/running?usage=1"));
        assert!(!u.body.contains(&theirs));

        let j = app.web.api(Method::GET, "/api/v1/sandbox-sessions?usage=1", None).await;
        assert_eq!(j.status, 200, "{}", j.body);
        assert!(!j.body.contains(&theirs), "another tenant's session in the API");
        let v = j.json();
        assert_eq!(v["organization_id"], caller.org_id.as_str());
        assert_eq!(v["usage_sampled"], true);
        let hosts = v["connections"].as_array().expect("connections");
        assert_eq!(hosts.len(), 1);
        assert_eq!(hosts[0]["connection_id"], conn.id.as_str());
        assert!(hosts[0]["problem"].is_null());
        assert_eq!(hosts[0]["host"]["tenant_limit"], 3);
        assert!(hosts[0]["host"]["open_sessions"].as_u64().is_some_and(|n| n >= 2));
        assert_eq!(hosts[0]["host"]["idle_timeout"], 1800);
        let ids: Vec<&str> = hosts[0]["sessions"].as_array().expect("sessions").iter().filter_map(|s| s["session_id"].as_str()).collect();
        assert_eq!(ids, [ours.as_str()]);
        assert_eq!(hosts[0]["sessions"][0]["status"], "running");

        // Another tenant's session on the same host: its activity is not found, page or poll.
        assert_eq!(app.web.get(&activity(&conn, &theirs)).await.status, 404);
        let f = hx_get(&app.web, &format!("{}?after=0", activity(&conn, &theirs))).await;
        assert_eq!(f.status, 404);
        assert!(!f.body.contains(&theirs));
        assert_eq!(app.web.get(&activity(&conn, "never-opened")).await.status, 404);

        // An operator sees them; a member may not.
        let operator = app.member_with_role("op@example.com", "operator").await;
        let r = operator.get("/sandboxes/running").await;
        assert_eq!(attrs(&r, "tr.session", "data-session-id"), [ours.as_str()]);
        let member = app.member_with_role("m@example.com", "member").await;
        assert_eq!(member.get("/sandboxes/running").await.status, 403);
        assert_eq!(member.get(&activity(&conn, &ours)).await.status, 403);
        member.api(Method::GET, "/api/v1/sandbox-sessions", None).await.problem(403);

        // Another organization sees none of it, and A's connection is not found for it.
        let b = app.other_org_user("b@example.com", "B Corp").await;
        let r = b.get("/sandboxes/running").await;
        assert_eq!(r.status, 200);
        assert!(r.select_text("#running-no-hosts").is_some_and(|t| t.contains("No sandbox sessions are running for B Corp")));
        assert!(!r.body.contains(&ours));
        assert_eq!(b.get(&activity(&conn, &ours)).await.status, 404);
        let j = b.api(Method::GET, "/api/v1/sandbox-sessions", None).await.json();
        assert_eq!(j["connections"].as_array().map(Vec::len), Some(0));

        for id in [&ours, &theirs] {
            let _ = host.delete_session(id, true).await;
        }
    }
}

db_test! {
    async fn activity_shows_the_hosts_events_and_polls_only_newer_ones(app: TestApp) {
        app.setup_owner().await;
        let peer = capped_peer().await;
        let caller = caller_of(&app.web).await;
        let conn = connect(&app, &caller, "main host", &peer.url, Some(&peer.token)).await;
        let host = host(peer);
        let ours = unique("busy");
        open(&host, &ours, &caller.org_id).await;

        let r = app.web.get(&activity(&conn, &ours)).await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert!(r.select_text("#activity-empty").is_some_and(|t| t.contains("Nothing has been logged yet")));
        assert!(r.select_all("tr.event").is_empty());

        let ran = host.run(&ours, &RunRequest::shell("echo hello-activity")).await.expect("run");
        assert_eq!(ran.exit_code, Some(0));

        let r = app.web.get(&activity(&conn, &ours)).await;
        assert_eq!(r.status, 200);
        assert!(r.select_text("#activity-empty").is_none());
        assert_eq!(r.select_all("tr.event").len(), 1);
        assert!(r.select_text("tr.event .target").is_some_and(|t| t.contains("echo hello-activity")));
        assert_eq!(r.select_text("tr.event .op").as_deref(), Some("run"));
        assert_eq!(r.select_text("tr.event .ok").as_deref(), Some("ok"));
        assert_eq!(r.select_text("tr.event .detail").as_deref(), Some("exit 0"));
        assert!(r.select_text("tr.event .duration").is_some_and(|d| d.ends_with("ms") || d.ends_with(" s")));
        let latest: u64 = r.select_attr("#activity-poll", "data-after").and_then(|a| a.parse().ok()).expect("the poller");
        assert_eq!(r.select_attr("tr.event", "data-seq"), Some(latest.to_string()));
        let next = format!("{}?after={latest}", activity(&conn, &ours));
        assert_eq!(r.select_attr("#activity-poll", "hx-get"), Some(next.clone()));
        assert_eq!(r.select_attr("#activity-poll", "hx-swap").as_deref(), Some("outerHTML"));
        assert!(r.select_attr("#activity-poll", "hx-trigger").is_some_and(|t| t.starts_with("every ")));
        assert!(r.select_text("#activity-live .closes-in").is_some_and(|t| t.ends_with("min")), "{}", r.body);
        assert!(r.select_text("#activity-live .idle").is_some());

        // Polling after the latest entry brings no old rows, and the same `after` again.
        let f = in_table(hx_get(&app.web, &next).await);
        assert_eq!(f.status, 200, "{}", f.body);
        assert!(!f.body.contains("<html"));
        assert!(f.select_all("tr.event").is_empty(), "old rows again: {}", f.body);
        // The idle time and closing time come along out of band, through a template in the rows.
        let live = f.body.split("<template>").nth(1).unwrap_or_default();
        assert!(live.starts_with(r#"<div id="activity-live" hx-swap-oob="true">"#), "{}", f.body);
        assert!(live.contains(r#"class="idle""#) && live.contains(r#"class="closes-in""#), "{live}");
        assert_eq!(f.select_attr("#activity-poll", "hx-get"), Some(next.clone()));

        // A new command: the next poll brings exactly its row, and drops the "nothing yet" line.
        host.run(&ours, &RunRequest::shell("echo second-command")).await.expect("run");
        let f = in_table(hx_get(&app.web, &next).await);
        assert_eq!(f.status, 200);
        let targets = f.select_all("tr.event .target");
        assert_eq!(targets.len(), 1, "{}", f.body);
        assert!(targets[0].contains("second-command") && !targets[0].contains("hello-activity"));
        assert_eq!(f.select_attr("#activity-empty", "hx-swap-oob").as_deref(), Some("delete"));
        let newer: u64 = f.select_attr("#activity-poll", "data-after").and_then(|a| a.parse().ok()).expect("poller");
        assert!(newer > latest);

        // Once the session is closed, the poll answers 404 with a last row and no poller.
        host.delete_session(&ours, true).await.expect("close");
        let f = in_table(hx_get(&app.web, &format!("{}?after={newer}", activity(&conn, &ours))).await);
        assert_eq!(f.status, 404);
        assert!(f.select_text("#activity-ended").is_some(), "{}", f.body);
        assert!(f.select_attr("#activity-poll", "hx-get").is_none());
        assert_eq!(app.web.get(&activity(&conn, &ours)).await.status, 404);
    }
}

db_test! {
    async fn a_host_that_cannot_be_read_is_a_message_beside_the_others(app: TestApp) {
        app.setup_owner().await;
        let peer = capped_peer().await;
        let caller = caller_of(&app.web).await;
        let good = connect(&app, &caller, "good host", &peer.url, Some(&peer.token)).await;
        let dead = connect(&app, &caller, "dead host", &dead_address(), Some("some-token")).await;
        // One address is one connection: the same host under its other name.
        let localhost = format!("http://localhost:{}", peer.port());
        let refused = connect(&app, &caller, "refusing host", &localhost, Some("not-the-token")).await;
        let keyless = connect(&app, &caller, "keyless host", &dead_address(), None).await;
        let other_peer = crate::peer::shared().await;
        let off = connect(&app, &caller, "switched off", &other_peer.url, Some(&other_peer.token)).await;
        connections::set_enabled(&app.state, &caller, &off.id, false).await.expect("switch off");
        let host = host(peer);
        let ours = unique("steady");
        open(&host, &ours, &caller.org_id).await;

        let r = app.web.get("/sandboxes/running").await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(attrs(&r, "tr.session", "data-session-id"), [ours.as_str()]);
        assert_eq!(attrs(&r, "section.host", "data-connection-id").len(), 5, "the switched-off one is listed too");
        assert!(r.select_text(&format!("#host-{} .host-problem", good.id)).is_none());
        let problem = |id: &str| r.select_text(&format!("#host-{id} .host-problem")).unwrap_or_default();
        assert!(problem(&dead.id).contains("did not answer"), "{}", problem(&dead.id));
        assert!(problem(&refused.id).contains("Credential refused"), "{}", problem(&refused.id));
        assert!(problem(&keyless.id).contains("no credential in the vault"), "{}", problem(&keyless.id));
        assert!(!r.body.contains("127.0.0.1"), "a host address in the page");
        assert!(!r.body.contains(&peer.token));

        let v = app.web.api(Method::GET, "/api/v1/sandbox-sessions", None).await.json();
        let hosts = v["connections"].as_array().expect("connections");
        // The switched-off host is listed too, marked off (what still runs there can be closed).
        assert_eq!(hosts.len(), 5);
        for h in hosts {
            let answers = h["connection_id"] == good.id.as_str() || h["connection_id"] == off.id.as_str();
            assert_eq!(h["problem"].is_null(), answers, "{h}");
            assert_eq!(h["is_enabled"], h["connection_id"] != off.id.as_str(), "{h}");
        }
        assert!(r.select_text(&format!("#host-{} .host-off", off.id)).is_some(), "{}", r.body);

        // The dashboard: a capacity card per host, linking to the Running tab.
        let d = app.web.get("/").await;
        assert_eq!(d.status, 200);
        assert_eq!(d.select_text(&format!("#capacity-{} .capacity-used", good.id)).as_deref(), Some("used 1 of 3"));
        assert_eq!(d.select_attr(&format!("#capacity-{}", good.id), "href").as_deref(), Some("/sandboxes/running"));
        assert!(d.select_text(&format!("#capacity-{} .capacity-problem", dead.id)).is_some_and(|t| t.contains("did not answer")));
        assert!(d.select_text(&format!("#capacity-{} .capacity-off", off.id)).is_some(), "{}", d.body);
        assert!(d.body.contains("SQLite (embedded)") || d.body.contains("PostgreSQL"), "the existing cards stay");

        let _ = host.delete_session(&ours, true).await;
    }
}

db_test! {
    async fn the_dashboard_points_at_sandboxes_when_no_host_is_registered(app: TestApp) {
        app.setup_owner().await;
        let r = app.web.get("/").await;
        assert_eq!(r.status, 200);
        assert!(r.select_text("#capacity-empty").is_some_and(|t| t.contains("No sandbox host is registered")));
        assert_eq!(r.select_attr("#capacity-empty a", "href").as_deref(), Some("/sandboxes"));
        assert!(r.select_text(".stat-label").is_some(), "the existing cards stay");

        // A member may not see sandboxes: no capacity section at all.
        let member = app.member_with_role("m@example.com", "member").await;
        let r = member.get("/").await;
        assert_eq!(r.status, 200);
        assert!(r.select_text("#sandbox-capacity").is_none());
    }
}

db_test! {
    async fn home_says_when_a_host_is_near_or_at_this_organizations_session_limit(app: TestApp) {
        app.setup_owner().await;
        let peer = capped_peer().await;
        let caller = caller_of(&app.web).await;
        let conn = connect(&app, &caller, "capped host", &peer.url, Some(&peer.token)).await;
        let host = host(peer);
        let sessions = [unique("cap-a"), unique("cap-b"), unique("cap-c")];

        // Two of the three this organization may hold: room left, nothing to say.
        for id in &sessions[..2] {
            open(&host, id, &caller.org_id).await;
        }
        let home = app.web.get("/").await;
        assert_eq!(home.status, 200);
        assert!(home.select_text(&format!("#health-cap-{}", conn.id)).is_none(), "{}", home.body);
        assert!(home.select_text(".capacity-near").is_none());
        assert!(home.select_text("#health-verdict").is_some_and(|v| v.starts_with("Yes")), "{}", home.body);

        // The third: full, said in the verdict, on the host's card, and with where it is fixed.
        open(&host, &sessions[2], &caller.org_id).await;
        let home = app.web.get("/").await;
        assert!(home.select_text("#health-verdict").is_some_and(|v| v.starts_with("Not quite")), "{}", home.body);
        let line = home.select_text(&format!("#health-cap-{}", conn.id)).expect("the host near its cap");
        assert!(line.contains("3 of the 3 sessions this organization may hold here are open, full"), "{line}");
        assert_eq!(home.select_attr(&format!("#health-cap-{} a", conn.id), "href").as_deref(), Some("/sandboxes/running"));
        assert_eq!(home.select_text(&format!("#capacity-{} .capacity-near", conn.id)).as_deref(), Some("full"));

        for id in &sessions {
            host.delete_session(id, true).await.expect("closed");
        }
        let home = app.web.get("/").await;
        assert!(home.select_text(&format!("#health-cap-{}", conn.id)).is_none(), "{}", home.body);
    }
}
