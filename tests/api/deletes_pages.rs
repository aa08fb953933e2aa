//! The console's delete confirmations say what goes and where (issue 12), over HTTP on SQLite and
//! PostgreSQL against the real sandboxd peer: the agent's delete dialog names its workspaces,
//! sandboxes and hosts and its post removes them; the members page's remove confirmation (a dialog
//! of the console's own) names the member's personal workspaces.

use reqwest::Method;
use serde_json::json;

use crate::db_test;
use crate::peer;
use crate::support::htmx::hx_get;
use crate::support::{service_agent, Org};

db_test! {
    async fn the_agent_delete_dialog_names_its_workspaces_and_hosts_and_confirming_removes_them(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        let connection = format!("peer-{}", peer.port());
        o.connect(peer).await;
        let agent = o.agent(service_agent("shared", "agent")).await;
        let run = o.run(&agent, None, json!({})).await;
        assert_eq!(o.write(&run, "a.txt", "x").await.status, 204);
        let key = o.ws(&run, Method::GET, "state", None).await.json()["session_key"].as_str().expect("key").to_string();
        let doc = o.agent(json!({"name": "doc", "backend": "state", "scope": "agent"})).await;
        let doc_run = o.run(&doc, None, json!({})).await;
        assert_eq!(o.write(&doc_run, "a.txt", "x").await.status, 204);

        // The agent's page offers the delete to whoever may edit agents.
        let page = app.web.get(&format!("/agents/{agent}")).await;
        assert_eq!(page.status, 200, "{}", page.body);
        let delete_path = format!("/agents/{agent}/delete");
        assert_eq!(page.select_attr("#agent-delete", "hx-get").as_deref(), Some(delete_path.as_str()));

        // The dialog (htmx) and the page both say how many workspaces and sandboxes go, and where.
        let dialog = app.web.send(app.web.http.get(app.web.url(&delete_path)).header("HX-Request", "true")).await;
        assert_eq!(dialog.status, 200, "{}", dialog.body);
        assert!(dialog.select_text("#agent-delete-dialog").is_some(), "a dialog: {}", dialog.body);
        let what = dialog.select_text("#agent-delete-what").expect("what goes");
        assert!(what.contains("1 workspace"), "{what}");
        assert!(what.contains(&format!("On “{connection}”, 1 sandbox is destroyed")), "{what}");
        let full = app.web.get(&delete_path).await;
        assert_eq!(full.status, 200);
        assert_eq!(full.select_text("#agent-delete-what"), Some(what.clone()));
        assert_eq!(full.select_attr("#agent-delete-form", "action").as_deref(), Some(delete_path.as_str()));
        // A document agent has no host to name.
        let doc_what = app.web.get(&format!("/agents/{doc}/delete")).await.select_text("#agent-delete-what").expect("what");
        assert!(doc_what.contains("1 workspace") && !doc_what.contains("sandbox"), "{doc_what}");

        // Roles below builder may not edit agents, so neither open the agent's page (where the
        // button is) nor delete it; another organization does not find the agent. Nothing goes.
        let operator = app.member_with_role("operator@example.com", "operator").await;
        assert_eq!(operator.get(&format!("/agents/{agent}")).await.status, 403);
        assert_eq!(operator.get(&delete_path).await.status, 403);
        assert_eq!(operator.post_form(&delete_path, &[]).await.status, 403);
        let member = app.member_with_role("member@example.com", "member").await;
        assert_eq!(member.get(&delete_path).await.status, 403);
        assert_eq!(member.post_form(&delete_path, &[]).await.status, 403);
        let other = app.other_org_user("other@example.com", "Other").await;
        assert_eq!(other.get(&delete_path).await.status, 404);
        assert_eq!(other.post_form(&delete_path, &[]).await.status, 404);
        assert_eq!(o.call(Method::GET, &format!("/api/v1/agents/{agent}"), None).await.status, 200);
        assert!(peer.workspace_root.join(&key).exists());

        // Confirming removes the agent, its workspace and its sandbox, and says so on the list.
        let r = app.web.post_form(&delete_path, &[]).await;
        assert_eq!(r.status, 303, "{}", r.body);
        assert_eq!(r.location().as_deref(), Some("/agents"));
        let list = app.web.get("/agents").await;
        let flash = list.select_text(".flash-success").expect("flash");
        assert!(flash.contains("Agent deleted with 1 workspace. 1 sandbox destroyed at its host."), "{flash}");
        assert_eq!(o.call(Method::GET, &format!("/api/v1/agents/{agent}"), None).await.status, 404);
        assert!(!peer.workspace_root.join(&key).exists(), "its files were purged");
        assert!(app.scalar_strings(&format!("SELECT id FROM sandbox_workspaces WHERE session_key = '{key}'")).await.is_empty());
        assert_eq!(app.web.get(&delete_path).await.status, 404);
    }
}

db_test! {
    async fn the_member_remove_confirmation_says_how_many_personal_workspaces_go_with_them(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        o.connect(peer).await;
        app.member_with_role("leaver@example.com", "member").await;
        app.member_with_role("idle@example.com", "member").await;
        let members = o.call(Method::GET, "/api/v1/members", None).await.json();
        let find = |email: &str| {
            members.as_array().expect("members").iter().find(|m| m["email"] == email).expect("member").clone()
        };
        let (leaver, idle) = (find("leaver@example.com"), find("idle@example.com"));
        // Two personal workspaces of the leaver (of two agents), one shared workspace that stays.
        for name in ["mine", "notes"] {
            let agent = o.agent(service_agent(name, "user")).await;
            let run = o.run(&agent, None, json!({"user_id": leaver["user_id"]})).await;
            assert_eq!(o.write(&run, "a.txt", "x").await.status, 204);
        }
        let shared = o.agent(service_agent("shared", "agent")).await;
        let run = o.run(&shared, None, json!({"user_id": leaver["user_id"]})).await;
        assert_eq!(o.write(&run, "a.txt", "x").await.status, 204);

        // The page's Remove opens the console's own dialog (no native confirm()).
        let page = app.web.get("/members").await;
        assert_eq!(page.status, 200, "{}", page.body);
        assert!(page.select_all("#members-table form[hx-confirm]").is_empty(), "a native confirm(): {}", page.body);
        let id = |m: &serde_json::Value| m["id"].as_str().expect("id").to_string();
        let remove = format!("/members/{}/delete", id(&leaver));
        assert_eq!(page.select_attr(&format!("#member-{} a.member-remove", id(&leaver)), "hx-get"), Some(remove.clone()));
        let confirm = |r: &crate::helpers::Resp| r.select_text("#member-remove-what").expect("what removing does");
        let members_before = app.count("memberships").await;
        let d = hx_get(&app.web, &remove).await;
        assert_eq!(d.status, 200, "{}", d.body);
        assert!(d.select_attr("dialog#member-remove-dialog", "data-modal").is_some() && !d.body.contains("<html"), "{}", d.body);
        assert!(d.select_text("#member-remove-title").is_some_and(|t| t.starts_with("Remove leaver@example.com from ")));
        let text = confirm(&d);
        assert!(text.starts_with("leaver@example.com loses access"), "{text}");
        assert!(text.contains("Their personal (user) 2 workspaces are deleted with them"), "{text}");
        assert_eq!(d.select_attr("#member-remove-form", "action"), Some(remove.clone()));
        assert!(d.select_attr("#member-remove-confirm", "class").is_some_and(|c| c.contains("btn-danger")));
        let idle_page = app.web.get(&format!("/members/{}/delete", id(&idle))).await;
        assert!(idle_page.select_text("nav.sidebar-nav").is_some(), "without htmx it is a page");
        assert!(confirm(&idle_page).contains("They have no personal workspaces to delete."), "{}", idle_page.body);
        // Asking removed no one; a member may not ask, another organization finds no one.
        assert_eq!(app.count("memberships").await, members_before);
        let member = app.member_with_role("m@example.com", "member").await;
        assert_eq!(hx_get(&member, &remove).await.status, 403);
        let b = app.other_org_user("b@example.com", "B Corp").await;
        assert_eq!(hx_get(&b, &remove).await.status, 404);

        // The reset's confirmation, likewise.
        let reset = format!("/members/{}/password-reset", id(&leaver));
        let d = hx_get(&app.web, &reset).await;
        assert_eq!(d.select_text("#member-reset-title").as_deref(), Some("Reset the password of leaver@example.com?"), "{}", d.body);
        assert_eq!(d.select_attr("#member-reset-form", "action"), Some(reset));

        // Confirmed: removed.
        let r = app.web.post_form(&remove, &[]).await;
        assert_eq!(r.status, 303, "{}", r.body);
        assert!(app.web.get("/members").await.select_text(".flash-success").is_some_and(|f| f.contains("leaver@example.com was removed")));
    }
}
