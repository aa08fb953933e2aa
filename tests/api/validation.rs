use reqwest::Method;

use crate::db_test;

db_test! {
    async fn bad_api_input_gets_422_naming_the_field_and_writes_nothing(app: TestApp) {
        app.setup_owner().await;
        let t = app.web.create_token_in_page("t", "owner").await;
        let before = (app.count("memberships").await, app.count("api_tokens").await, app.count("vault_secrets").await, app.count("organizations").await);

        let r = app.web.bearer(&t, Method::POST, "/api/v1/members", Some(serde_json::json!({"email": "", "role": "member"}))).await;
        r.problem(422);
        assert_eq!(r.problem_fields(), vec!["email"]);

        let r = app.web.bearer(&t, Method::POST, "/api/v1/members", Some(serde_json::json!({"email": "x@example.com", "role": "emperor"}))).await;
        r.problem(422);
        assert_eq!(r.problem_fields(), vec!["role"]);

        let r = app.web.bearer(&t, Method::POST, "/api/v1/tokens", Some(serde_json::json!({"name": "n".repeat(101), "role": "member"}))).await;
        r.problem(422);
        assert_eq!(r.problem_fields(), vec!["name"]);

        let r = app.web.bearer(&t, Method::POST, "/api/v1/organizations", Some(serde_json::json!({"name": "   "}))).await;
        r.problem(422);
        assert_eq!(r.problem_fields(), vec!["name"]);

        let r = app.web.bearer_raw(&t, Method::POST, "/api/v1/vault/secrets", "{\"name\": \"x\", ").await;
        let p = r.problem(422);
        assert!(!r.problem_fields().is_empty(), "{p}");

        let r = app.web.bearer_raw(&t, Method::POST, "/api/v1/members", r#"{"email": "x@example.com", "role": "member", "admin": true}"#).await;
        r.problem(422);
        assert_eq!(r.problem_fields(), vec!["admin"]);

        let r = app.web.bearer_raw(&t, Method::POST, "/api/v1/vault/secrets", r#"{"purpose": "other", "value": "v"}"#).await;
        r.problem(422);
        assert_eq!(r.problem_fields(), vec!["name"]);

        let after = (app.count("memberships").await, app.count("api_tokens").await, app.count("vault_secrets").await, app.count("organizations").await);
        assert_eq!(before, after, "nothing was written");
    }
}

db_test! {
    async fn bad_form_input_is_shown_inline_with_422(app: TestApp) {
        app.setup_owner().await;
        let r = app.web.post_form("/members", &[("email", ""), ("role", "emperor")]).await;
        assert_eq!(r.status, 422);
        assert!(r.field_error("member-email").is_some());
        assert!(r.field_error("member-role").is_some_and(|m| m.contains("owner, admin")));
        let r = app.web.post_form("/tokens", &[("name", &"n".repeat(101)), ("role", "member")]).await;
        assert_eq!(r.status, 422);
        assert!(r.field_error("token-name").is_some_and(|m| m.contains("100")));
        assert_eq!(r.select_attr("#token-name", "value").map(|v| v.len()), Some(101), "the input is kept");
        let r = app.web.post_form("/orgs", &[("name", "")]).await;
        assert_eq!(r.status, 422);
        assert!(r.field_error("name").is_some());
        assert_eq!(app.count("memberships").await, 1);
        assert_eq!(app.count("api_tokens").await, 0);
        assert_eq!(app.count("organizations").await, 1);
    }
}

db_test! {
    async fn names_with_text_direction_overrides_or_zero_width_characters_are_refused(app: TestApp) {
        app.setup_owner().await;
        let token = app.web.create_token_in_page("names", "owner").await;
        for name in ["evil\u{202E}gnp.exe", "a\u{200B}b", "\u{2066}x"] {
            let r = app
                .web
                .bearer(&token, reqwest::Method::POST, "/api/v1/organizations", Some(serde_json::json!({ "name": name })))
                .await;
            r.problem(422);
            assert_eq!(r.problem_fields(), vec!["name".to_string()], "{name:?}: {}", r.body);
            let r = app
                .web
                .bearer(&token, reqwest::Method::POST, "/api/v1/tokens", Some(serde_json::json!({ "name": name, "role": "member" })))
                .await;
            r.problem(422);
        }
        assert_eq!(app.count("organizations").await, 1, "nothing was written");
        // The page shows it inline.
        let r = app.web.post_form("/orgs", &[("name", "a\u{202E}b")]).await;
        assert_eq!(r.status, 422, "{}", r.body);
        assert!(r.body.contains("cannot contain invisible characters or text-direction overrides"), "{}", r.body);
    }
}

db_test! {
    async fn channel_keys_and_senders_with_line_breaks_or_invisible_characters_are_refused(app: TestApp) {
        use serde_json::json;
        app.setup_owner().await;
        let token = app.web.create_token_in_page("channels", "owner").await;
        let post = |path: &'static str, body: serde_json::Value| {
            let (web, token) = (&app.web, token.clone());
            async move { web.bearer(&token, Method::POST, path, Some(body)).await }
        };
        let agent = post("/api/v1/agents", json!({"name": "chan", "backend": "state", "scope": "channel"})).await;
        assert_eq!(agent.status, 201, "{}", agent.body);
        let agent = agent.json()["id"].as_str().expect("id").to_string();
        let bad = ["slack:C1\r\nX-Injected: 1", "slack:\u{202E}1C", "slack:\u{200B}C1", "a\0b"];
        for key in bad {
            let r = post("/api/v1/conversations", json!({"agent_id": agent, "title": "t", "channel_key": key})).await;
            r.problem(422);
            assert_eq!(r.problem_fields(), vec!["channel_key".to_string()], "{key:?}: {}", r.body);
        }
        assert_eq!(app.count("conversations").await, 0, "nothing was written");
        let conversation =
            post("/api/v1/conversations", json!({"agent_id": agent, "title": "t", "channel_key": "slack:C1"})).await;
        assert_eq!(conversation.status, 201, "{}", conversation.body);
        let conversation = conversation.json()["id"].as_str().expect("id").to_string();
        for sender in bad {
            let run = json!({"agent_id": agent, "conversation_id": conversation, "started_by": "channel", "channel_sender": sender});
            let r = post("/api/v1/runs", run).await;
            r.problem(422);
            assert_eq!(r.problem_fields(), vec!["channel_sender".to_string()], "{sender:?}: {}", r.body);
        }
        assert_eq!(app.count("runs").await, 0, "nothing was written");
        let run = json!({"agent_id": agent, "conversation_id": conversation, "started_by": "channel", "channel_sender": "U123"});
        assert_eq!(post("/api/v1/runs", run).await.status, 201);
    }
}
