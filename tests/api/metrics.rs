//! `GET /metrics` (issue 29): off unless turned on, never public by accident (its own address, or
//! a bearer token on the main one), the figures an operator watches, and no organization, user
//! data, path, address or key in any label. The Grafana dashboard queries only what it exports.

use std::collections::BTreeSet;

use crate::db_test;
use crate::helpers::{fresh_database, test_config, Backend};
use crate::peer;
use crate::support::metrics::{pending_delete, scrape, scrape_with, workload, METRICS_TOKEN, WITH_TOKEN};

db_test! {
    async fn metrics_are_off_by_default(app: TestApp) {
        for token in [None, Some(METRICS_TOKEN)] {
            let r = scrape_with(&app, token).await;
            assert_eq!(r.status, 404, "{}", r.body);
            assert!(!r.body.contains("agenticos_"), "{}", r.body);
        }
    }
}

db_test! {
    async fn with_a_token_no_token_or_a_wrong_one_is_refused(app: TestApp) settings(WITH_TOKEN) {
        for token in [None, Some("metrics-token-for-tests-wrong-one"), Some("")] {
            let r = scrape_with(&app, token).await;
            let problem = r.problem(401);
            assert!(problem["detail"].as_str().is_some_and(|d| d.contains("AGENTICOS_METRICS_TOKEN")), "{problem}");
            assert!(!r.body.contains("agenticos_http"), "{}", r.body);
        }
        // A console session is no metrics token either.
        app.setup_owner().await;
        assert_eq!(app.web.get("/metrics").await.status, 401);

        let r = scrape_with(&app, Some(METRICS_TOKEN)).await;
        assert_eq!(r.status, 200);
        assert!(r.header("content-type").is_some_and(|t| t.starts_with("text/plain")), "{:?}", r.headers);
        let pin = std::fs::read_to_string(format!("{}/catalog/sandboxd.version", env!("CARGO_MANIFEST_DIR")))
            .expect("the pin file");
        let build = format!(r#"sandboxd="{}""#, pin.trim());
        assert!(
            r.body.lines().any(|l| l.starts_with("agenticos_build_info{") && l.contains(&build) && l.ends_with(" 1")),
            "{}",
            r.body
        );
    }
}

db_test! {
    async fn the_figures_count_requests_host_calls_sessions_and_recorded_operations_without_naming_anyone(
        app: TestApp
    ) settings(WITH_TOKEN) {
        let peer = peer::shared().await;
        let w = workload(&app, peer).await;
        let path = "secret-plans/q3-budget.txt";
        w.operate(path, 2).await;
        let text = scrape(&app).await;

        let files = r#"route="/api/v1/runs/{run_id}/workspace/files""#;
        assert!(text.lines().any(|l| l.starts_with("agenticos_http_requests_total{") && l.contains(files)
            && l.contains(r#"method="PUT""#) && l.contains(r#"status="2xx""#)), "{text}");
        assert!(text.lines().any(|l| l.starts_with("agenticos_http_request_duration_seconds_bucket{")
            && l.contains(files)), "{text}");
        let ours = format!(r#"connection="{}""#, w.connection);
        assert!(text.lines().any(|l| l.starts_with("agenticos_sandbox_host_calls_total{") && l.contains(&ours)
            && l.contains(r#"operation="open_session""#) && l.contains(r#"outcome="ok""#)), "{text}");
        assert!(text.lines().any(|l| l.starts_with("agenticos_sandbox_host_call_duration_seconds_count{")
            && l.contains(&ours) && l.contains(r#"operation="files_write""#)), "{text}");
        let open = format!("agenticos_sandbox_open_sessions{{{ours}}} 1");
        assert!(text.lines().any(|l| l == open), "{open} in:\n{text}");
        let pending = format!("agenticos_tombstones_pending{{{ours}}} 0");
        assert!(text.lines().any(|l| l == pending), "{pending} in:\n{text}");
        assert!(value(&text, r#"agenticos_workspace_operations_recorded_total{operation="write"}"#) >= 2.0, "{text}");
        for name in ["agenticos_recording_queue_depth", "agenticos_db_pool_in_use", "agenticos_db_pool_connections",
            "agenticos_db_pool_acquire_wait_seconds_count", "agenticos_recording_dropped_total"] {
            assert!(text.lines().any(|l| l.starts_with(name)), "{name} in:\n{text}");
        }

        // No organization, user, path, address, id of anything but a connection, or key.
        let forbidden = [
            "Acme", crate::helpers::OWNER_EMAIL, &w.org.org_id, &w.run, "secret-plans", "q3-budget", &w.org.token,
            &peer.token, &peer.url, "127.0.0.1",
        ];
        for word in forbidden {
            assert!(!text.contains(word), "{word:?} is in the metrics:\n{text}");
        }
        // Bounded label sets: every route label is a pattern of ours (or `unmatched`).
        for route in label_values(&text, "route") {
            assert!(route == "unmatched" || route == "/" || route.starts_with('/'), "{route}");
            assert!(!route.contains("..") && !route.contains('?'), "{route}");
        }
        let unknown = app.web.get(&format!("/no/such/{}", w.run)).await;
        assert_eq!(unknown.status, 404);
        let text = scrape(&app).await;
        assert!(!text.contains(&w.run), "an unknown path leaked into a label:\n{text}");
        assert!(text.contains(r#"route="unmatched""#), "{text}");
    }
}

db_test! {
    async fn destroy_attempts_and_sweep_runs_are_counted(app: TestApp) settings(WITH_TOKEN) {
        let peer = peer::shared().await;
        let w = workload(&app, peer).await;
        // A removed sandbox the host no longer knows: the sweep's destroy confirms it gone.
        pending_delete(&app, &w.org.org_id, &w.connection, None, agenticos::db::now_ms()).await;
        let before = scrape(&app).await;
        agenticos::monitoring::sweeps::destroy_retry(&app.state, agenticos::db::now_ms()).await;
        let after = scrape(&app).await;
        let destroyed = r#"agenticos_tombstone_destroy_attempts_total{outcome="destroyed"}"#;
        assert!(value(&after, destroyed) >= value(&before, destroyed) + 1.0, "{after}");
        let runs = r#"agenticos_sweep_runs_total{sweep="sandbox-destroy-retry",outcome="ok"}"#;
        assert!(value(&after, runs) >= value(&before, runs) + 1.0, "{after}");
        let removed = r#"agenticos_sweep_rows_removed_total{sweep="sandbox-destroy-retry"}"#;
        assert!(value(&after, removed) >= value(&before, removed) + 1.0, "{after}");
        let gauge = format!(r#"agenticos_tombstones_pending{{connection="{}"}} 0"#, w.connection);
        assert!(after.lines().any(|l| l == gauge), "{gauge} in:\n{after}");
        assert_eq!(app.count("sandbox_tombstones").await, 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_on_their_own_address_are_served_there_and_nowhere_else() {
    for backend in [Backend::Sqlite, Backend::Postgres] {
        let Some(db) = fresh_database(backend).await else { continue };
        let settings = [("AGENTICOS_METRICS", "1"), ("AGENTICOS_METRICS_BIND", "127.0.0.1:0")];
        let config = test_config(&db.url, db.dir.path(), &settings);
        let app = agenticos::startup::Application::build(config).await.expect("the application builds");
        let (main, own) = (app.port(), app.metrics_port().expect("a metrics listener"));
        tokio::spawn(app.run_until_stopped());
        let http = reqwest::Client::new();
        let get = |port: u16, path: &str| http.get(format!("http://127.0.0.1:{port}{path}")).send();
        let on_own = get(own, "/metrics").await.expect("metrics address");
        assert_eq!(on_own.status(), 200);
        assert!(on_own.text().await.unwrap_or_default().contains("agenticos_build_info"));
        // The main address has no token configured: nothing there; the metrics address serves
        // nothing else.
        assert_eq!(get(main, "/metrics").await.expect("main").status(), 404);
        for path in ["/api/v1/me", "/healthz", "/login"] {
            assert_eq!(get(own, path).await.expect("metrics address").status(), 404, "{path}");
        }
        crate::helpers::drop_database(db.name.clone()).await;
    }
}

db_test! {
    async fn the_grafana_dashboard_queries_only_metrics_the_console_exports(app: TestApp) settings(WITH_TOKEN) {
        let peer = peer::shared().await;
        workload(&app, peer).await.operate("dashboard.txt", 1).await;
        let text = scrape(&app).await;
        let exported: BTreeSet<&str> =
            text.lines().filter_map(|l| l.strip_prefix("# TYPE ")).filter_map(|l| l.split(' ').next()).collect();
        let queried = dashboard_metrics();
        assert!(queried.len() >= 10, "the dashboard queries only {queried:?}");
        for name in &queried {
            let family = ["_bucket", "_sum", "_count"].iter().fold(name.as_str(), |n, s| n.strip_suffix(s).unwrap_or(n));
            assert!(exported.contains(family), "the dashboard queries {name}, which /metrics does not export: {exported:?}");
            assert!(agenticos::instruments::ALL.contains(&family), "{family} is not in instruments::ALL");
        }
    }
}

/// Every `agenticos_…` name in the dashboard's queries.
fn dashboard_metrics() -> BTreeSet<String> {
    let path = format!("{}/deploy/grafana/agenticos.json", env!("CARGO_MANIFEST_DIR"));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("the dashboard")).expect("the dashboard is JSON");
    let mut exprs = Vec::new();
    collect_exprs(&json, &mut exprs);
    assert!(!exprs.is_empty(), "no query in the dashboard");
    let mut names = BTreeSet::new();
    for e in exprs {
        let mut rest = e.as_str();
        while let Some(i) = rest.find("agenticos_") {
            let tail = &rest[i..];
            let end = tail.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(tail.len());
            names.insert(tail[..end].to_string());
            rest = &tail[end..];
        }
    }
    names
}

fn collect_exprs(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                match (k.as_str(), v.as_str()) {
                    ("expr", Some(e)) => out.push(e.to_string()),
                    _ => collect_exprs(v, out),
                }
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|v| collect_exprs(v, out)),
        _ => {}
    }
}

/// The value of the sample line starting with `series` (0 when absent).
fn value(text: &str, series: &str) -> f64 {
    text.lines().find_map(|l| l.strip_prefix(series).and_then(|v| v.trim().parse().ok())).unwrap_or(0.0)
}

/// Every value the label `name` takes in `text`.
fn label_values(text: &str, name: &str) -> BTreeSet<String> {
    let key = format!(r#"{name}=""#);
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once(&key).and_then(|(_, rest)| rest.split_once('"')).map(|(v, _)| v.to_string()))
        .collect()
}
