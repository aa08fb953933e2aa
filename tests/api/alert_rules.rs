//! The Prometheus alerting rules shipped in `deploy/prometheus/` (issue 49): `promtool test rules`
//! passes on their unit tests (each alert fires when it should and not before, one problem seen by
//! two replicas is one alert), and every metric they name is one `/metrics` really exports.

use std::collections::BTreeSet;
use std::path::PathBuf;

use crate::db_test;
use crate::peer;
use crate::support::metrics::{scrape, workload, WITH_TOKEN};

fn rules_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("deploy/prometheus")
}

/// Every `agenticos_…` name in the rules' expressions.
fn metrics_in_rules() -> BTreeSet<String> {
    let text = std::fs::read_to_string(rules_dir().join("agenticos-alerts.yml")).expect("the rules");
    let mut names = BTreeSet::new();
    for expr in text.lines().filter_map(|l| l.trim().strip_prefix("expr:")) {
        let mut rest = expr;
        while let Some(i) = rest.find("agenticos_") {
            let tail = &rest[i..];
            let end = tail.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(tail.len());
            names.insert(tail[..end].to_string());
            rest = &tail[end..];
        }
    }
    names
}

db_test! {
    async fn the_alert_rules_pass_promtool_and_name_only_metrics_the_console_exports(app: TestApp) settings(WITH_TOKEN) {
        // A connection, so the per-connection gauges are in the scrape.
        workload(&app, peer::shared().await).await;
        let text = scrape(&app).await;
        let exported: BTreeSet<&str> =
            text.lines().filter_map(|l| l.strip_prefix("# TYPE ")).filter_map(|l| l.split(' ').next()).collect();
        let named = metrics_in_rules();
        let wanted = [
            "agenticos_sandbox_host_down_seconds",
            "agenticos_tombstones_overdue",
            "agenticos_sweep_last_run_failed",
            "agenticos_recording_dropped_total",
        ];
        for w in wanted {
            assert!(named.contains(w), "no rule watches {w}: {named:?}");
        }
        for name in &named {
            assert!(exported.contains(name.as_str()), "a rule names {name}, which /metrics does not export: {exported:?}");
            assert!(agenticos::instruments::ALL.contains(&name.as_str()), "{name} is not in instruments::ALL");
        }

        let promtool = std::env::var("PROMTOOL_BIN").unwrap_or_else(|_| "promtool".to_string());
        let ran = tokio::process::Command::new(&promtool)
            .args(["test", "rules", "agenticos-alerts.test.yml"])
            .current_dir(rules_dir())
            .output()
            .await;
        let out = match ran {
            Ok(out) => out,
            Err(e) if std::env::var("CI").is_ok_and(|v| v == "true" || v == "1") => {
                panic!("promtool is required with CI=true (apt-get install prometheus): {promtool}: {e}")
            }
            Err(e) => {
                eprintln!("SKIPPED: promtool did not start ({promtool}: {e}); apt-get install prometheus");
                return;
            }
        };
        let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "promtool test rules failed:\n{said}");
        assert!(said.contains("SUCCESS"), "{said}");
    }
}
