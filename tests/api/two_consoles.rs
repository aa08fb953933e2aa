//! Two consoles in one process (two `AppState`s, as two replicas or two tests) keep their own
//! caches: what one authenticated or built is never the other's answer (issue 48; the
//! architecture test refuses a new `static` holding state).

use reqwest::Method;
use serde_json::json;

use crate::daytona_fake;
use crate::db_test;
use crate::helpers::{fresh_database, spawn_app_on, TestDatabase};
use crate::support::org::Org;
use agenticos::sandbox::connections::service as connections;
use agenticos::sandbox::hosts::daytona::connections as daytona;

db_test! {
    async fn a_token_one_console_answered_is_not_answered_by_another_from_its_cache(app: TestApp) {
        let o = Org::new(&app).await;
        let me = o.call(Method::GET, "/api/v1/me", None).await;
        assert_eq!(me.status, 200, "{}", me.body);
        // Another console on its own, empty database: the token means nothing there.
        let Some(database) = fresh_database(app.backend).await else { return };
        let name = database.name.clone();
        let other = spawn_app_on(app.backend, database, &[]).await;
        let there = other.web.bearer(&o.token, Method::GET, "/api/v1/me", None).await;
        assert_eq!(there.status, 401, "the other console answered from the first one's cache: {}", there.body);
        crate::helpers::drop_database(name).await;
    }
}

db_test! {
    async fn a_daytona_client_one_console_built_is_not_handed_to_another(app: TestApp) {
        let o = Org::new(&app).await;
        let fake = daytona_fake::shared();
        let r = o.call(Method::POST, "/api/v1/sandbox-connections", Some(json!({"name": "fake", "kind": "daytona",
            "address": fake.api_url, "new_key": fake.api_key, "save_anyway": true}))).await;
        assert_eq!(r.status, 201, "{}", r.body);
        let id = r.json()["id"].as_str().expect("id").to_string();
        let conn = connections::for_org(&app.state, &o.org_id, &id).await.expect("read").expect("the row");
        assert!(daytona::client_for(&app.state, &o.org_id, &conn).await.is_ok(), "the first console builds its client");
        // Another console on the same database with another vault key (each test app draws its
        // own): it cannot read the key, so it has no client, whatever the first one keeps.
        let same = TestDatabase { url: app.state.config.database.url.clone(), name: None, dir: tempfile::tempdir().expect("dir") };
        let other = spawn_app_on(app.backend, same, &[]).await;
        let built = daytona::client_for(&other.state, &o.org_id, &conn).await;
        assert!(built.is_err(), "the other console was handed the first one's client");
    }
}
