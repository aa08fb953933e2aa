//! Invitations (issue 8, item 5): adding a person makes a pending invitation they accept; the
//! answer is the same whether or not the e-mail has an account, and nobody joins without accepting.

use std::collections::BTreeSet;

use reqwest::Method;
use serde_json::{json, Value};

use crate::db_test;
use crate::helpers::{link_path, Client, TestApp, MEMBER_PASSWORD, OWNER_PASSWORD};

fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object().map(|o| o.keys().cloned().collect()).unwrap_or_default()
}

/// Invites through the API with the owner's session, returning the answer.
async fn invite_api(app: &TestApp, email: &str, role: &str) -> Value {
    let r = app.web.api(Method::POST, "/api/v1/members", Some(json!({"email": email, "role": role}))).await;
    assert_eq!(r.status, 201, "{}", r.body);
    r.json()
}

/// Whether a response starts a sign-in (one of its cookies is the session's).
fn sets_session(r: &crate::helpers::Resp) -> bool {
    r.headers.get_all("set-cookie").iter().any(|v| v.to_str().is_ok_and(|c| c.starts_with("agos_session=")))
}

fn path_of(answer: &Value) -> String {
    link_path(answer["accept_url"].as_str().expect("accept_url"))
}

async fn invitation_state(app: &TestApp, id: &str) -> (bool, bool) {
    let accepted =
        app.scalar_strings(&format!("SELECT id FROM invitations WHERE id = '{id}' AND accepted_at IS NOT NULL")).await;
    let revoked =
        app.scalar_strings(&format!("SELECT id FROM invitations WHERE id = '{id}' AND revoked_at IS NOT NULL")).await;
    (!accepted.is_empty(), !revoked.is_empty())
}

async fn memberships_of(app: &TestApp, email: &str) -> Vec<String> {
    app.scalar_strings(&format!(
        "SELECT o.name FROM memberships m JOIN users u ON u.id = m.user_id JOIN organizations o ON o.id = m.organization_id \
         WHERE u.email = '{email}' ORDER BY o.name"
    ))
    .await
}

db_test! {
    async fn a_new_and_an_existing_email_get_the_same_answer_and_neither_joins_yet(app: TestApp) {
        app.setup_owner().await;
        let bob = app.other_org_user("bob@example.com", "Bob Inc").await;
        let token = app.web.create_token_in_page("inviter", "admin").await;
        let (users, memberships) = (app.count("users").await, app.count("memberships").await);
        let mut answers = Vec::new();
        for email in ["new@example.com", "bob@example.com"] {
            let r = app.web.bearer(&token, Method::POST, "/api/v1/members", Some(json!({"email": email, "role": "builder"}))).await;
            assert_eq!(r.status, 201, "{}", r.body);
            answers.push(r.json());
        }
        let (new, existing) = (&answers[0], &answers[1]);
        assert_eq!(keys(new), keys(existing));
        assert_eq!(keys(new), ["accept_url", "invitation", "invitation_code"].map(String::from).into());
        assert_eq!(keys(&new["invitation"]), keys(&existing["invitation"]));
        assert_eq!(
            keys(&new["invitation"]),
            ["created_at", "email", "expires_at", "id", "role", "status"].map(String::from).into()
        );
        for a in &answers {
            assert!(!a.to_string().contains("password"), "{a}");
            assert_eq!(a["invitation"]["status"], "pending");
            assert_eq!(a["invitation"]["role"], "builder");
            let (created, expires) = (a["invitation"]["created_at"].as_i64(), a["invitation"]["expires_at"].as_i64());
            assert_eq!(expires.zip(created).map(|(e, c)| e - c), Some(7 * 24 * 3600 * 1000), "valid 7 days");
            let code = a["invitation_code"].as_str().expect("code");
            assert_eq!(code.len(), 43, "32 random bytes, base64url");
            assert!(a["accept_url"].as_str().is_some_and(|u| u.ends_with(&format!("/invitations/{code}"))));
        }
        assert_eq!((app.count("users").await, app.count("memberships").await), (users, memberships), "no account, no membership");
        let orgs = bob.api(Method::GET, "/api/v1/organizations", None).await.json();
        assert_eq!(orgs.as_array().map(Vec::len), Some(1), "Bob cannot see Acme before he accepts: {orgs}");

        let list = app.web.bearer(&token, Method::GET, "/api/v1/members/invitations", None).await;
        assert_eq!(list.status, 200);
        let listed = list.json();
        let emails: BTreeSet<&str> = listed.as_array().expect("a list").iter().filter_map(|i| i["email"].as_str()).collect();
        assert_eq!(emails, BTreeSet::from(["bob@example.com", "new@example.com"]), "{}", list.body);
        for a in &answers {
            assert!(!list.body.contains(a["invitation_code"].as_str().unwrap_or("-")), "a listed invitation carries no code");
        }
    }
}

db_test! {
    async fn an_existing_account_accepts_on_the_link_page_after_signing_in(app: TestApp) {
        app.setup_owner().await;
        let bob = app.other_org_user("bob@example.com", "Bob Inc").await;
        let carol = app.other_org_user("carol@example.com", "Carol Ltd").await;
        let answer = invite_api(&app, "bob@example.com", "operator").await;
        let link = path_of(&answer);

        // Signed in as someone else: told so, offered to sign out, and cannot join.
        let page = carol.get(&link).await;
        assert_eq!(page.status, 200);
        assert!(page.select_text("#invitation-other-account").is_some_and(|t| t.contains("bob@example.com")));
        assert!(page.select_text("#join-button").is_none());
        assert!(page.select_attr("form[action='/logout'] button", "type").is_some(), "sign-out is offered");
        let r = carol.post_form(&link, &[]).await;
        assert_eq!(r.status, 403, "{}", r.body);
        assert_eq!(memberships_of(&app, "carol@example.com").await, vec!["Carol Ltd".to_string()]);

        // Signed in as Bob: the organization, role and e-mail, and one button.
        let page = bob.get(&link).await;
        assert_eq!(page.status, 200);
        assert_eq!(page.select_text("#invitation-organization").as_deref(), Some("Acme"));
        assert_eq!(page.select_text("#invitation-role").as_deref(), Some("Operator"));
        assert_eq!(page.select_text("#invitation-email").as_deref(), Some("bob@example.com"));
        assert!(page.select_text("#join-button").is_some_and(|t| t == "Join Acme"));
        assert!(page.select_text("#password").is_none(), "a signed-in invitee needs no password");
        assert_eq!(page.header("cache-control").as_deref(), Some("no-store"));
        let r = bob.post_form(&link, &[]).await;
        assert_eq!(r.status, 303, "{}", r.body);
        assert_eq!(r.location().as_deref(), Some("/"));
        let home = bob.get("/").await;
        assert_eq!(home.select_text("main h1").as_deref(), Some("Acme"), "he lands in the new organization");
        assert!(home.body.contains("Welcome to Acme. You joined as operator."));
        assert_eq!(memberships_of(&app, "bob@example.com").await, vec!["Acme".to_string(), "Bob Inc".to_string()]);
        let id = answer["invitation"]["id"].as_str().expect("id");
        assert_eq!(invitation_state(&app, id).await, (true, false));
        let joined = app.scalar_strings("SELECT actor_label || ' ' || detail FROM audit_events WHERE action = 'member.joined'").await;
        assert_eq!(joined, vec!["bob@example.com as operator".to_string()]);

        // The link is single use.
        let again = bob.get(&link).await;
        assert_eq!(again.status, 410);
        assert!(again.body.contains("used already"), "{}", again.body);
    }
}

db_test! {
    async fn an_existing_account_accepts_or_declines_from_the_notice_on_its_home_page(app: TestApp) {
        app.setup_owner().await;
        let bob = app.other_org_user("bob@example.com", "Bob Inc").await;
        let acme = invite_api(&app, "bob@example.com", "builder").await;
        let acme_id = acme["invitation"]["id"].as_str().expect("id").to_string();
        // A second organization of the owner invites Bob too.
        assert_eq!(app.web.post_form("/orgs", &[("name", "Second")]).await.status, 303);
        let second = invite_api(&app, "bob@example.com", "member").await;
        let second_id = second["invitation"]["id"].as_str().expect("id").to_string();
        let other = invite_api(&app, "carol@example.com", "member").await;

        let home = bob.get("/").await;
        let notice = home.select_text("#pending-invitations").expect("a notice of the pending invitations");
        assert!(notice.contains("Acme") && notice.contains("Second") && notice.contains("Builder"), "{notice}");
        assert!(!home.body.contains(acme["invitation_code"].as_str().unwrap_or("-")), "the notice carries no code");
        assert_eq!(
            home.select_attr(&format!("#invitation-{acme_id} form"), "action"),
            Some(format!("/invitations/{acme_id}/accept"))
        );

        // Someone else's invitation is not Bob's to take.
        let carols = other["invitation"]["id"].as_str().expect("id");
        assert_eq!(bob.post_form(&format!("/invitations/{carols}/accept"), &[]).await.status, 404);
        assert_eq!(bob.post_form(&format!("/invitations/{carols}/decline"), &[]).await.status, 404);

        let r = bob.post_form(&format!("/invitations/{acme_id}/accept"), &[]).await;
        assert_eq!(r.status, 303, "{}", r.body);
        assert_eq!(bob.get("/").await.select_text("main h1").as_deref(), Some("Acme"));
        let r = bob.post_form(&format!("/invitations/{second_id}/decline"), &[]).await;
        assert_eq!(r.status, 303, "{}", r.body);
        assert_eq!(memberships_of(&app, "bob@example.com").await, vec!["Acme".to_string(), "Bob Inc".to_string()]);
        assert_eq!(invitation_state(&app, &acme_id).await, (true, false));
        assert_eq!(invitation_state(&app, &second_id).await, (false, true));
        assert!(bob.get("/").await.select_text("#pending-invitations").is_none(), "nothing pending any more");
        let declined = app.scalar_strings("SELECT target FROM audit_events WHERE action = 'member.invitation_declined'").await;
        assert_eq!(declined, vec!["bob@example.com".to_string()]);
        assert_eq!(bob.post_form(&format!("/invitations/{second_id}/accept"), &[]).await.status, 410, "declined is final");
        let me = bob.api(Method::GET, "/api/v1/me", None).await.json();
        assert_eq!((me["organization"]["name"].as_str(), me["role"].as_str()), (Some("Acme"), Some("builder")));
    }
}

db_test! {
    async fn a_new_person_chooses_a_password_on_the_link_page_and_is_signed_in(app: TestApp) {
        app.setup_owner().await;
        app.other_org_user("bob@example.com", "Bob Inc").await;
        let new = path_of(&invite_api(&app, "new@example.com", "builder").await);
        let existing = path_of(&invite_api(&app, "bob@example.com", "builder").await);

        // One form for both, worded so that it does not tell whether the account exists.
        let c = app.new_client();
        let (a, b) = (c.get(&new).await, c.get(&existing).await);
        assert_eq!((a.status.as_u16(), b.status.as_u16()), (200, 200));
        for page in [&a, &b] {
            let hint = page.select_text("#password-hint").expect("the password's hint");
            assert_eq!(hint, "Enter your password, or choose one if you are new here (at least 10 characters).");
        }
        // Every element of the form, with its attributes in order and its own text.
        let form = |r: &crate::helpers::Resp, link: &str| {
            let sel = scraper::Selector::parse("form, form *").expect("selector");
            r.html()
                .select(&sel)
                .map(|e| {
                    let mut attrs: Vec<String> = e.value().attrs().map(|(k, v)| format!("{k}={}", v.replace(link, "LINK"))).collect();
                    attrs.sort();
                    let text: String = e.text().collect();
                    format!("{} {attrs:?} {}", e.value().name(), text.trim())
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(form(&a, &new), form(&b, &existing), "the same form for a new and an existing account");

        let users = app.count("users").await;
        let r = c.accept_invitation(&new, "short").await;
        assert_eq!(r.status, 422);
        assert!(r.field_error("password").is_some_and(|m| m.contains("at least 10")), "{}", r.body);
        assert_eq!(app.count("users").await, users, "nothing written");

        let r = c.accept_invitation(&new, "my own new password").await;
        assert_eq!(r.status, 303, "{}", r.body);
        assert_eq!(r.location().as_deref(), Some("/"));
        assert!(sets_session(&r), "signed in");
        let home = c.get("/").await;
        assert_eq!(home.select_text("main h1").as_deref(), Some("Acme"));
        assert_eq!(app.count("users").await, users + 1);
        assert_eq!(memberships_of(&app, "new@example.com").await, vec!["Acme".to_string()]);
        let hash = app.scalar_strings("SELECT password_hash FROM users WHERE email = 'new@example.com'").await.remove(0);
        assert!(hash.starts_with("$argon2id$"), "{hash}");
        let joined = app.scalar_strings("SELECT detail FROM audit_events WHERE action = 'member.joined'").await;
        assert_eq!(joined, vec!["as builder; account created".to_string()]);
        assert_eq!(app.new_client().post_login("new@example.com", "my own new password").await.status, 303);

        // An existing account joins with its own password, which stays as it was.
        let c = app.new_client();
        let r = c.accept_invitation(&existing, OWNER_PASSWORD).await;
        assert_eq!(r.status, 303, "{}", r.body);
        assert_eq!(memberships_of(&app, "bob@example.com").await, vec!["Acme".to_string(), "Bob Inc".to_string()]);
        assert_eq!(c.get("/").await.select_text("main h1").as_deref(), Some("Acme"));
        assert_eq!(app.count("users").await, users + 1);
    }
}

db_test! {
    async fn a_wrong_password_at_the_link_is_refused_counted_and_writes_nothing(app: TestApp) {
        app.setup_owner().await;
        app.other_org_user("bob@example.com", "Bob Inc").await;
        let answer = invite_api(&app, "bob@example.com", "admin").await;
        let link = path_of(&answer);
        let id = answer["invitation"]["id"].as_str().expect("id");
        let c = app.new_client();
        let memberships = app.count("memberships").await;
        for i in 0..5 {
            let r = c.accept_invitation(&link, "not bob's password").await;
            assert_eq!(r.status, 401, "attempt {}: {}", i + 1, r.body);
            assert!(r.select_text(".alert-error").is_some_and(|m| m.contains("not its password")), "{}", r.body);
            assert!(!sets_session(&r), "no sign-in");
        }
        assert_eq!(app.count("memberships").await, memberships, "nothing written");
        assert_eq!(app.count("login_sessions").await, 2, "the owner's and Bob's own");
        assert_eq!(invitation_state(&app, id).await, (false, false), "still pending");
        assert_eq!(app.count("login_failures").await, 5, "counted by the sign-in limit");
        let failed = app.scalar_strings("SELECT detail FROM audit_events WHERE action = 'sign_in.failed'").await;
        assert_eq!(failed.len(), 5);
        assert!(failed.iter().all(|d| d == "wrong password at an invitation"));

        // The sixth try is refused before the password is checked, here and at /login.
        let r = c.accept_invitation(&link, OWNER_PASSWORD).await;
        assert_eq!(r.status, 429, "{}", r.body);
        assert!(r.header("retry-after").is_some_and(|s| s.parse::<u64>().is_ok_and(|s| s > 0)));
        assert_eq!(app.new_client().post_login("bob@example.com", OWNER_PASSWORD).await.status, 429);
        assert_eq!(app.count("memberships").await, memberships);
        assert_eq!(invitation_state(&app, id).await, (false, false));
    }
}

db_test! {
    async fn expired_used_revoked_and_unknown_codes_are_refused_with_a_clear_page(app: TestApp) {
        app.setup_owner().await;
        let token = app.web.create_token_in_page("t", "owner").await;
        let expired = invite_api(&app, "late@example.com", "member").await;
        let used = invite_api(&app, "quick@example.com", "member").await;
        let revoked = invite_api(&app, "gone@example.com", "member").await;
        let expired_id = expired["invitation"]["id"].as_str().expect("id");
        app.execute(&format!("UPDATE invitations SET expires_at = created_at - 1 WHERE id = '{expired_id}'")).await;
        assert_eq!(app.new_client().accept_invitation(&path_of(&used), MEMBER_PASSWORD).await.status, 303);
        let revoked_id = revoked["invitation"]["id"].as_str().expect("id");
        let r = app.web.bearer(&token, Method::DELETE, &format!("/api/v1/members/invitations/{revoked_id}"), None).await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.json()["status"], "revoked");
        let again = app.web.bearer(&token, Method::DELETE, &format!("/api/v1/members/invitations/{revoked_id}"), None).await;
        assert_eq!(again.json()["status"], "revoked", "revoking twice answers the same");
        let audited = app.scalar_strings("SELECT target FROM audit_events WHERE action = 'member.invitation_revoked'").await;
        assert_eq!(audited, vec!["gone@example.com".to_string()]);

        let users = app.count("users").await;
        let memberships = app.count("memberships").await;
        let fresh = app.new_client();
        for (answer, words) in [(&expired, "expired"), (&used, "used already"), (&revoked, "withdrawn")] {
            let link = path_of(answer);
            let page = fresh.get(&link).await;
            assert_eq!(page.status, 410, "{link}: {}", page.body);
            assert!(page.body.contains(words), "{words}: {}", page.body);
            assert!(page.select_text("#password").is_none());
            let token = fresh.csrf().await;
            let post = fresh
                .send(fresh.http.post(fresh.url(&link)).form(&[("password", "a good password"), ("csrf_token", &token)]))
                .await;
            assert_eq!(post.status, 410, "{}", post.body);
            // Signed in as the owner, the Join path refuses it the same way.
            assert_eq!(app.web.post_form(&link, &[]).await.status, 410);
        }
        let unknown = fresh.get("/invitations/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa").await;
        assert_eq!(unknown.status, 404);
        assert!(unknown.body.contains("not valid"), "{}", unknown.body);
        assert_eq!((app.count("users").await, app.count("memberships").await), (users, memberships), "nothing written");
        // The members page lists the expired one as such, and the API says so.
        let page = app.web.get("/members").await;
        assert!(page.select_text(&format!("#invitation-{expired_id}")).is_some_and(|t| t.contains("expired")));
        let list = app.web.bearer(&token, Method::GET, "/api/v1/members/invitations", None).await.json();
        assert_eq!(list.as_array().map(Vec::len), Some(1), "{list}");
        assert_eq!(list[0]["status"], "expired");
        // An accepted invitation is not revoked: its person is a member.
        let used_id = used["invitation"]["id"].as_str().expect("id");
        let r = app.web.bearer(&token, Method::DELETE, &format!("/api/v1/members/invitations/{used_id}"), None).await;
        r.problem(409);
    }
}

db_test! {
    async fn inviting_an_address_again_replaces_its_code(app: TestApp) {
        app.setup_owner().await;
        let first = invite_api(&app, "twice@example.com", "member").await;
        let second_link = app.invite("twice@example.com", "operator").await;
        let old = app.new_client().get(&path_of(&first)).await;
        assert_eq!(old.status, 410);
        assert!(old.body.contains("replaced by a newer one"), "{}", old.body);
        let list = app.web.api(Method::GET, "/api/v1/members/invitations", None).await.json();
        assert_eq!(list.as_array().map(Vec::len), Some(1), "one pending invitation per address: {list}");
        assert_eq!(list[0]["role"], "operator");
        let details = app.scalar_strings("SELECT detail FROM audit_events WHERE action = 'member.invited' ORDER BY seq").await;
        assert_eq!(details, vec!["as member, valid 7 days".to_string(), "as operator, valid 7 days; replaces the earlier invitation".to_string()]);
        let c = app.new_client();
        assert_eq!(c.accept_invitation(&second_link, MEMBER_PASSWORD).await.status, 303);
        let me = c.api(Method::GET, "/api/v1/me", None).await.json();
        assert_eq!(me["role"], "operator");
    }
}

db_test! {
    async fn another_organizations_invitation_is_404_and_stays_pending(app: TestApp) {
        app.setup_owner().await;
        let answer = invite_api(&app, "target@example.com", "member").await;
        let id = answer["invitation"]["id"].as_str().expect("id");
        let b = app.other_org_user("b@example.com", "B Corp").await;
        let b_token = b.create_token_in_page("b", "owner").await;
        let path = format!("/api/v1/members/invitations/{id}");
        b.bearer(&b_token, Method::DELETE, &path, None).await.problem(404);
        b.api(Method::DELETE, &path, None).await.problem(404);
        assert_eq!(b.post_form(&format!("/members/invitations/{id}/revoke"), &[]).await.status, 404);
        let list = b.bearer(&b_token, Method::GET, "/api/v1/members/invitations", None).await.json();
        assert_eq!(list.as_array().map(Vec::len), Some(0), "{list}");
        assert_eq!(invitation_state(&app, id).await, (false, false));
        // The owner revokes it on the members page.
        let r = app.web.post_form(&format!("/members/invitations/{id}/revoke"), &[]).await;
        assert_eq!(r.status, 303);
        assert!(app.web.get("/members").await.body.contains("The invitation of target@example.com was revoked"));
        assert_eq!(invitation_state(&app, id).await, (false, true));
    }
}

db_test! {
    async fn the_code_is_in_no_audit_row_no_column_and_no_log(app: TestApp) {
        app.setup_owner().await;
        let answer = invite_api(&app, "secretive@example.com", "member").await;
        let code = answer["invitation_code"].as_str().expect("code").to_string();
        let link = path_of(&answer);
        let c = app.new_client();
        assert_eq!(c.get(&link).await.status, 200);
        assert_eq!(c.accept_invitation(&link, "any good password").await.status, 303, "a new account is created");
        let rows = app
            .scalar_strings("SELECT actor_label || '|' || action || '|' || target || '|' || detail FROM audit_events")
            .await;
        assert!(rows.iter().any(|r| r.contains("member.invited")) && rows.iter().any(|r| r.contains("member.joined")));
        assert!(rows.iter().all(|r| !r.contains(&code)), "{rows:?}");
        let stored = app.scalar_strings("SELECT code_hash FROM invitations").await;
        assert_eq!(stored.len(), 1);
        assert_ne!(stored[0], code);
        assert_eq!(stored[0].len(), 64, "its SHA-256, in hex");
        // The test's own HTML parser logs what it reads; the application's lines must not hold it.
        let logs = crate::helpers::captured_logs();
        let app_lines: Vec<&str> = logs.lines().filter(|l| l.contains("\"target\":\"agenticos")).collect();
        assert!(app_lines.iter().any(|l| l.contains("/invitations/…")), "the link's requests are logged, redacted");
        assert!(app_lines.iter().all(|l| !l.contains(&code)), "the code reached a log");
    }
}

db_test! {
    async fn below_admin_nobody_invites_lists_or_revokes(app: TestApp) {
        app.setup_owner().await;
        let pending = invite_api(&app, "someone@example.com", "member").await;
        let id = pending["invitation"]["id"].as_str().expect("id");
        let member = app.member_with_role("m@example.com", "member").await;
        let builder: Client = app.member_with_role("b@example.com", "builder").await;
        let before = app.count("invitations").await;
        for who in [&member, &builder] {
            assert_eq!(who.post_form("/members", &[("email", "x@example.com"), ("role", "member")]).await.status, 403);
            who.api(Method::POST, "/api/v1/members", Some(json!({"email": "x@example.com", "role": "member"}))).await.problem(403);
            who.api(Method::GET, "/api/v1/members/invitations", None).await.problem(403);
            who.api(Method::DELETE, &format!("/api/v1/members/invitations/{id}"), None).await.problem(403);
        }
        assert_eq!(app.count("invitations").await, before, "nothing written");
        assert_eq!(invitation_state(&app, id).await, (false, false));
        // An admin cannot grant owner, nor touch an owner's invitation.
        let admin = app.member_with_role("a@example.com", "admin").await;
        let r = admin.api(Method::POST, "/api/v1/members", Some(json!({"email": "boss@example.com", "role": "owner"}))).await;
        r.problem(422);
        assert_eq!(r.problem_fields(), vec!["role".to_string()]);
        let owner_invite = invite_api(&app, "co-owner@example.com", "owner").await;
        let oid = owner_invite["invitation"]["id"].as_str().expect("id");
        admin.api(Method::DELETE, &format!("/api/v1/members/invitations/{oid}"), None).await.problem(409);
        let r = admin.api(Method::POST, "/api/v1/members", Some(json!({"email": "co-owner@example.com", "role": "member"}))).await;
        r.problem(409);
        assert_eq!(invitation_state(&app, oid).await, (false, false));
        assert!(admin.get("/members").await.select_text(&format!("#invitation-{oid}")).is_some_and(|t| t.contains("Outranks you")));
    }
}

db_test! {
    async fn two_accepts_of_one_code_at_once_join_once(app: TestApp) {
        app.setup_owner().await;
        let bob = app.other_org_user("bob@example.com", "Bob Inc").await;
        let link = path_of(&invite_api(&app, "bob@example.com", "member").await);
        let token = bob.csrf().await;
        let post = || bob.send(bob.http.post(bob.url(&link)).form(&[("csrf_token", token.as_str())]));
        let (a, b) = tokio::join!(post(), post());
        let mut statuses = [a.status.as_u16(), b.status.as_u16()];
        statuses.sort();
        assert_eq!(statuses, [303, 410], "{} / {}", a.body, b.body);
        assert_eq!(memberships_of(&app, "bob@example.com").await, vec!["Acme".to_string(), "Bob Inc".to_string()]);
        let joined = app.scalar_strings("SELECT target FROM audit_events WHERE action = 'member.joined'").await;
        assert_eq!(joined.len(), 1);
    }
}
