//! Real Chromium: the flows that need htmx and a browser running, on SQLite and PostgreSQL.

use crate::browser::{self, Browser};
use crate::db_test;
use crate::helpers::{OWNER_EMAIL, OWNER_ORG, OWNER_PASSWORD};
use crate::support::browser_sign_in::sign_in;

db_test! {
    async fn setup_login_dashboard_logout_in_a_real_browser(app: TestApp) -> anyhow::Result<()> {
        if !browser::browser_or_skip("setup_login_dashboard_logout_in_a_real_browser") {
            return Ok(());
        }
        let b = Browser::start().await?;
        b.goto(&format!("{}/", app.address)).await?;
        // Not signed in and no account: / → /login → /setup.
        b.wait_for("#organization").await?;
        assert_eq!(b.current_path().await?, "/setup");
        b.fill("#organization", OWNER_ORG).await?;
        b.fill("#email", OWNER_EMAIL).await?;
        b.fill("#password", OWNER_PASSWORD).await?;
        b.click("button[type=submit]").await?;
        b.wait_for("nav.sidebar-nav").await?;
        assert_eq!(b.current_path().await?, "/");
        assert_eq!(b.text("main h1").await?, OWNER_ORG);
        shot(&b, "dashboard").await?;

        // Sign out (a boosted form carrying the CSRF header), then sign in again.
        b.click(".user-menu button[type=submit]").await?;
        b.wait_for("#password").await?;
        assert_eq!(b.current_path().await?, "/login");
        b.fill("#email", OWNER_EMAIL).await?;
        b.fill("#password", "wrong password!").await?;
        b.click("button[type=submit]").await?;
        b.wait_for_text(".alert-error", "e-mail or password is wrong").await?;
        b.fill("#email", OWNER_EMAIL).await?;
        b.fill("#password", OWNER_PASSWORD).await?;
        b.click("button[type=submit]").await?;
        b.wait_for("nav.sidebar-nav").await?;
        assert_eq!(b.text("main h1").await?, OWNER_ORG);

        // An htmx-boosted page change keeps working (members page, invite a person).
        b.click("nav.sidebar-nav a[href='/members']").await?;
        b.wait_for("#member-email").await?;
        b.fill("#member-email", "teammate@example.com").await?;
        b.click("form[action='/members'] button[type=submit]").await?;
        b.wait_for("#invitation-link").await?;
        // A full navigation may still be parsing the table when the link above it appears.
        b.wait_for_text("#invitations-table", "teammate@example.com").await?;
        shot(&b, "members").await?;

        b.click(".user-menu button[type=submit]").await?;
        b.wait_for("#password").await?;
        assert_eq!(b.current_path().await?, "/login");
        assert_eq!(app.count("login_sessions").await, 0);
        shot(&b, "login").await?;
        b.close().await
    }
}

db_test! {
    async fn an_invited_person_chooses_a_password_and_lands_in_the_organization(app: TestApp) -> anyhow::Result<()> {
        if !browser::browser_or_skip("an_invited_person_chooses_a_password_and_lands_in_the_organization") {
            return Ok(());
        }
        app.setup_owner().await;
        let b = Browser::start().await?;
        sign_in(&b, &app.address).await?;
        b.click("nav.sidebar-nav a[href='/members']").await?;
        b.wait_for("#member-email").await?;
        b.fill("#member-email", "newcomer@example.com").await?;
        b.wait_for("#member-role").await?.select_by_value("builder").await?;
        b.click("form[action='/members'] button[type=submit]").await?;
        let link = b.wait_for_text("#invitation-link", "/invitations/").await?;
        b.wait_for_text("#invitations-table", "newcomer@example.com").await?;
        shot(&b, "invited").await?;
        b.click(".user-menu button[type=submit]").await?;
        b.wait_for("#password").await?;

        // The newcomer, in a browser with no sign-in, opens the link.
        b.goto(&format!("{}{}", app.address, crate::helpers::link_path(&link))).await?;
        b.wait_for("#join-button").await?;
        assert_eq!(b.text("#invitation-organization").await?, OWNER_ORG);
        assert_eq!(b.text("#invitation-email").await?, "newcomer@example.com");
        assert!(b.text("#password-hint").await?.contains("choose one if you are new here"));
        shot(&b, "invitation").await?;
        b.fill("#password", "short").await?;
        b.fill("#confirm-password", "short").await?;
        b.click("#join-button").await?;
        b.wait_for_text("#password-error", "at least 10").await?;
        b.fill("#password", "a newcomer's password").await?;
        b.fill("#confirm-password", "a newcomer's password").await?;
        b.click("#join-button").await?;
        b.wait_for("nav.sidebar-nav").await?;
        assert_eq!(b.current_path().await?, "/");
        assert_eq!(b.text("main h1").await?, OWNER_ORG);
        assert!(b.text("#flash").await?.contains("You joined as builder"));
        assert!(b.text(".user-menu").await?.contains("newcomer@example.com"));
        b.close().await
    }
}

/// With `SCREENSHOTS=1`, saves `target/screenshots/<name>.png` to look at.
async fn shot(b: &Browser, name: &str) -> anyhow::Result<()> {
    if std::env::var("SCREENSHOTS").is_ok() {
        std::fs::create_dir_all("target/screenshots")?;
        b.screenshot(format!("target/screenshots/{name}.png")).await?;
    }
    Ok(())
}

db_test! {
    async fn a_connection_is_added_tested_and_saved_in_the_dialog(app: TestApp) -> anyhow::Result<()> {
        if !browser::browser_or_skip("a_connection_is_added_tested_and_saved_in_the_dialog") {
            return Ok(());
        }
        let peer = crate::peer::shared().await;
        app.setup_owner().await;
        let b = Browser::start().await?;
        sign_in(&b, &app.address).await?;
        b.click("nav.sidebar-nav a[href='/sandboxes']").await?;
        b.wait_for("#add-connection").await?;
        b.wait_for_text(".empty-state", "No sandbox host").await?;
        b.click("#add-connection").await?;
        b.wait_for("dialog#connection-dialog[open] #connection-name").await?;
        // Before any probe the catalog is offered, unmarked.
        // (Read once the dialog has faded in: a transparent element has no visible text.)
        let before = b.wait_for_text("#connection-runtime", "python").await?;
        assert!(
            before.contains("workbench") && before.contains("python") && !before.contains("offered by this host"),
            "{before}"
        );
        b.fill("#connection-name", "peer").await?;
        b.fill("#connection-address", &peer.url).await?;
        b.fill("#connection-new-key", &peer.token).await?;
        b.click("#probe-button").await?;
        b.wait_for_text("#probe-result", "accepted the key").await?;
        let after = b.wait_for_text("#connection-runtime", "offered by this host").await?;
        assert!(after.contains("workbench") && after.contains("offered by this host"), "{after}");
        shot(&b, "connection-dialog").await?;
        b.click("#save-connection").await?;
        // The save navigates (HX-Redirect): wait through it.
        let table = b.wait_for_text("#connections-table", "healthy").await?;
        assert!(table.contains("peer") && table.contains("default") && table.contains("healthy"), "{table}");
        assert!(!b.client.source().await?.contains(&peer.token), "the token reached the browser");
        shot(&b, "connections").await?;

        // Its policy panel, read live from the host.
        b.click("#connections-table a[href$='/policy']").await?;
        let runtimes = b.wait_for_text("#policy-runtimes", "workbench").await?;
        assert!(runtimes.contains("workbench") && runtimes.contains("python"), "{runtimes}");
        shot(&b, "policy").await?;

        // A session this organization opened on the host shows in the Running tab.
        let org_id = app.scalar_strings("SELECT id FROM organizations").await.remove(0);
        let session = format!("browser-{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
        let body = serde_json::json!({"session_id": session, "tenant": org_id, "reuse": true});
        let opened = peer.request(reqwest::Method::POST, "/sessions").json(&body).send().await?;
        assert!(opened.status().is_success());
        b.goto(&format!("{}/sandboxes/running", app.address)).await?;
        // The row names whose the session is (here: no workspace's); its key shows on hover.
        let row = format!("#running-sessions tr.session[data-session-id='{session}']");
        b.wait_for_text(&format!("{row} .agent-name"), "no workspace of this organization").await?;
        assert_eq!(b.wait_for(&format!("{row} .agent")).await?.attr("title").await?, Some(format!("Session key: {session}")));
        shot(&b, "running").await?;
        b.close().await
    }
}

db_test! {
    async fn an_agents_runtime_and_scope_fields_refresh_in_a_real_browser(app: TestApp) -> anyhow::Result<()> {
        if !browser::browser_or_skip("an_agents_runtime_and_scope_fields_refresh_in_a_real_browser") {
            return Ok(());
        }
        let peer = crate::peer::shared().await;
        app.setup_owner().await;
        let closed = std::net::TcpListener::bind("127.0.0.1:0")?;
        let down = format!("http://127.0.0.1:{}", closed.local_addr()?.port());
        drop(closed);
        let mut ids = Vec::new();
        for (name, address, key) in
            [("down", down.as_str(), "some-key-1234"), ("peer", peer.url.as_str(), peer.token.as_str())]
        {
            let body = serde_json::json!({"name": name, "address": address, "new_key": key, "save_anyway": true});
            let r = app.web.api(reqwest::Method::POST, "/api/v1/sandbox-connections", Some(body)).await;
            ids.push(r.json()["id"].as_str().unwrap_or_default().to_string());
        }
        let body =
            serde_json::json!({"name": "coder", "backend": "service", "connection_id": ids[0], "scope": "conversation"});
        let agent = app.web.api(reqwest::Method::POST, "/api/v1/agents", Some(body)).await.json();

        let b = Browser::start().await?;
        sign_in(&b, &app.address).await?;
        b.goto(&format!("{}/agents/{}", app.address, agent["id"].as_str().unwrap_or_default())).await?;
        b.wait_for_text("#runtime-unavailable", "did not answer").await?;
        b.wait_for("#agent-connection").await?.select_by_value(&ids[1]).await?;
        let runtimes = b.wait_for_text("#agent-runtime", "python").await?;
        assert!(runtimes.contains("workbench"), "{runtimes}");
        assert!(b.client.find(fantoccini::Locator::Css("#runtime-unavailable")).await.is_err());
        b.wait_for("#agent-scope").await?.select_by_value("agent").await?;
        b.wait_for_text("#agent-scope-warning", "Every user of this agent shares the files").await?;
        b.wait_for("#agent-runtime").await?.select_by_value("python").await?;
        shot(&b, "agent-form").await?;
        b.click("#save-agent").await?;
        b.wait_for("#agents-table").await?;
        let table = b.text("#agents-table").await?;
        assert!(
            table.contains("peer") && table.contains("python") && table.contains("anyone who talks to this agent"),
            "{table}"
        );
        shot(&b, "agents").await?;
        b.close().await
    }
}

db_test! {
    async fn an_agents_snapshot_setting_is_refused_inline_then_saved_in_a_real_browser(app: TestApp) -> anyhow::Result<()> {
        if !browser::browser_or_skip("an_agents_snapshot_setting_is_refused_inline_then_saved_in_a_real_browser") {
            return Ok(());
        }
        app.setup_owner().await;
        let host = app.insert_idle_sandboxd_connection("host-a").await;
        let body = serde_json::json!({"name": "saver", "backend": "service", "connection_id": host, "scope": "conversation"});
        let agent = app.web.api(reqwest::Method::POST, "/api/v1/agents", Some(body)).await;
        assert_eq!(agent.status, 201, "{}", agent.body);
        let id = agent.json()["id"].as_str().unwrap_or_default().to_string();

        let b = Browser::start().await?;
        sign_in(&b, &app.address).await?;
        b.goto(&format!("{}/agents/{id}", app.address)).await?;
        assert_eq!(b.wait_for("#agent-keep-last").await?.prop("value").await?.as_deref(), Some("5"));
        b.wait_for("#agent-snapshots").await?.select_by_value("on_finish").await?;
        b.fill("#agent-keep-last", "0").await?;
        b.click("#save-agent").await?;
        // htmx swaps the form in place: the message at its field, the choice kept, the field
        // marked invalid, nothing saved.
        b.wait_for_text("#agent-keep-last-error", "Keep 1 to 100 snapshots").await?;
        let keep = b.wait_for("#agent-keep-last").await?;
        assert_eq!(keep.attr("aria-invalid").await?.as_deref(), Some("true"));
        assert_eq!(b.wait_for("#agent-snapshots").await?.prop("value").await?.as_deref(), Some("on_finish"));
        assert_eq!(b.current_path().await?, format!("/agents/{id}"));
        let path = format!("/api/v1/agents/{id}/snapshot-settings");
        let settings = app.web.api(reqwest::Method::GET, &path, None).await.json();
        assert_eq!(settings, serde_json::json!({"snapshots": "never", "keep_last": 5}));
        shot(&b, "agent-form-snapshots-error").await?;

        b.fill("#agent-keep-last", "7").await?;
        b.click("#save-agent").await?;
        b.wait_for("#agents-table").await?;
        let settings = app.web.api(reqwest::Method::GET, &path, None).await.json();
        assert_eq!(settings, serde_json::json!({"snapshots": "on_finish", "keep_last": 7}));
        b.goto(&format!("{}/agents/{id}", app.address)).await?;
        assert_eq!(b.wait_for("#agent-snapshots").await?.prop("value").await?.as_deref(), Some("on_finish"));
        assert_eq!(b.wait_for("#agent-keep-last").await?.prop("value").await?.as_deref(), Some("7"));
        b.close().await
    }
}
