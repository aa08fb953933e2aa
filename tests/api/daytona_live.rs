//! The real-account smoke checklist of docs/daytona.md ("A real-account smoke checklist"), run
//! against a REAL Daytona only when `DAYTONA_API_KEY` is set (`DAYTONA_API_URL` optional, else
//! Daytona's cloud); otherwise it prints SKIPPED and proves nothing. Each step is one function
//! below, named in the docs' checklist in the order [`STEPS`] runs them
//! (`the_live_checklist_in_the_docs_is_the_live_tests_steps` keeps the two the same); each
//! request's status, the headers that matter and the body (cut at 600 characters) are logged as
//! `live step <name>: …`. What a step expects is asserted where Daytona's answer is known (from
//! its v0.190.0 source); what is there to be learnt (timings, header names, messages) is logged.
//! The sandboxes it makes are named `agenticos-smoke-*` and deleted by the step that made them.
//!
//! This waits in real time (starts, auto-stop, an image build: about 20 minutes in all): it
//! observes a real service, it does not make a race pass.

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{json, Value};

/// A live run: the API, the key, and the sandbox the steps share.
struct Live {
    http: reqwest::Client,
    api: String,
    key: String,
    /// The shared sandbox (default snapshot): its JSON as Daytona last answered.
    sandbox: Option<Value>,
    step: &'static str,
}

type Step = Result<(), String>;

/// One request, logged: (status, body as JSON or `Null`, the raw text).
async fn call(live: &Live, method: Method, url: &str, body: Option<Value>) -> (u16, Value, reqwest::header::HeaderMap) {
    let mut req = live.http.request(method.clone(), url).bearer_auth(&live.key);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let began = Instant::now();
    match req.send().await {
        Ok(r) => {
            let status = r.status().as_u16();
            let headers = r.headers().clone();
            let text = r.text().await.unwrap_or_default();
            let shown: String = text.chars().take(600).collect();
            let path = url.strip_prefix(&live.api).unwrap_or(url);
            eprintln!("live step {}: {method} {path} -> {status} in {:?}: {shown}", live.step, began.elapsed());
            (status, serde_json::from_str(&text).unwrap_or(Value::Null), headers)
        }
        Err(e) => {
            eprintln!("live step {}: {method} {url} -> no answer: {e}", live.step);
            (0, Value::Null, Default::default())
        }
    }
}

fn state_of(v: &Value) -> &str {
    v["state"].as_str().unwrap_or("?")
}

/// Polls `GET /sandbox/{id}` every 2 s until its state is one of `want` (or 404 when `want`
/// holds "404"), at most `limit`; logs each change; the last answer.
async fn wait_for(live: &Live, id: &str, want: &[&str], limit: Duration) -> Result<Value, String> {
    let began = Instant::now();
    let mut last = String::new();
    loop {
        let (status, v, _) = call(live, Method::GET, &format!("{}/sandbox/{id}", live.api), None).await;
        let now = if status == 404 { "404".to_string() } else { state_of(&v).to_string() };
        if now != last {
            eprintln!("live step {}: {id} is {now} after {:?}", live.step, began.elapsed());
            last = now.clone();
        }
        if want.contains(&now.as_str()) {
            return Ok(v);
        }
        if began.elapsed() > limit {
            return Err(format!("{id} still {now} after {limit:?} (waited for {want:?})"));
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

/// `{toolboxProxyUrl}/{id}`.
fn toolbox(sb: &Value) -> String {
    format!(
        "{}/{}",
        sb["toolboxProxyUrl"].as_str().unwrap_or_default().trim_end_matches('/'),
        sb["id"].as_str().unwrap_or_default()
    )
}

fn shared(live: &Live) -> Result<Value, String> {
    live.sandbox.clone().ok_or_else(|| "no shared sandbox (step_workspace_home failed)".to_string())
}

/// A new sandbox `agenticos-smoke-<what>-<random>` with `extra` fields.
async fn create(live: &Live, what: &str, extra: Value) -> Result<Value, String> {
    let name = format!("agenticos-smoke-{what}-{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    let mut body = json!({"name": name, "labels": {"agenticos.io/smoke": "1"}});
    if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
        b.extend(e.clone());
    }
    let began = Instant::now();
    let (status, v, _) = call(live, Method::POST, &format!("{}/sandbox", live.api), Some(body)).await;
    eprintln!("live step {}: create held {:?}, state {}", live.step, began.elapsed(), state_of(&v));
    if status != 200 {
        return Err(format!("create answered {status}: {v}"));
    }
    Ok(v)
}

async fn delete(live: &Live, id: &str) {
    call(live, Method::DELETE, &format!("{}/sandbox/{id}", live.api), None).await;
}

/// Key scopes: what the connection's check asks (the key, the default snapshot, the permissions
/// `write:sandboxes` and `delete:sandboxes`, proven without creating a sandbox). A key with only
/// one of them must be reported missing the other: run once with such a key to see it.
async fn step_key_scopes(live: &mut Live) -> Step {
    use agenticos::sandbox::hosts::daytona::client::DaytonaClient;
    let url = url::Url::parse(&live.api).map_err(|e| e.to_string())?;
    let client = DaytonaClient::new(live.http.clone(), url, live.key.clone().into()).map_err(|e| e.to_string())?;
    let found = agenticos::sandbox::hosts::daytona::connections::find(&client, None).await;
    eprintln!(
        "live step {}: key {:?}; snapshot {:?}; missing permissions {:?}",
        live.step, found.key, found.snapshot, found.missing
    );
    found.key.as_ref().map_err(|e| format!("the key: {e:?}"))?;
    let snapshot = found.snapshot.as_ref().ok_or("no snapshot asked")?;
    snapshot.found.as_ref().map_err(|e| format!("the default snapshot {:?}: {e:?}", snapshot.name))?;
    Ok(())
}

/// The workspace folder: a sandbox of the default snapshot, its home (`GET /user-home-dir`) and
/// what the home holds before anything is written (the dotfiles kept out of workspaces).
async fn step_workspace_home(live: &mut Live) -> Step {
    let sb = create(live, "home", json!({"autoStopInterval": 15})).await?;
    let sb = wait_for(live, sb["id"].as_str().unwrap_or_default(), &["started"], Duration::from_secs(300)).await?;
    live.sandbox = Some(sb.clone());
    let tb = toolbox(&sb);
    let (_, home, _) = call(live, Method::GET, &format!("{tb}/user-home-dir"), None).await;
    let (_, work, _) = call(live, Method::GET, &format!("{tb}/work-dir"), None).await;
    let home = home["dir"].as_str().ok_or("no home dir")?.to_string();
    eprintln!("live step {}: home {home}, work dir {}", live.step, work["dir"]);
    let (status, list, _) = call(live, Method::GET, &format!("{tb}/files?path={}", urlencode(&home)), None).await;
    let names: Vec<&str> =
        list.as_array().map(|l| l.iter().filter_map(|e| e["name"].as_str()).collect()).unwrap_or_default();
    eprintln!("live step {}: the home holds {names:?}", live.step);
    let folder = format!("{home}/workspace");
    let (made, _, _) =
        call(live, Method::POST, &format!("{tb}/files/folder?path={}&mode=0755", urlencode(&folder)), None).await;
    if status != 200 || made != 201 {
        return Err(format!("listing the home: {status}; making {folder}: {made}"));
    }
    Ok(())
}

/// Not running, stopped: a toolbox call answers 400 `…no IP address found. Is the Sandbox
/// started?` (srv v0.190.0 apps/runner/pkg/api/controllers/proxy.go).
async fn step_stopped_answer(live: &mut Live) -> Step {
    let sb = shared(live)?;
    let id = sb["id"].as_str().unwrap_or_default().to_string();
    let began = Instant::now();
    call(live, Method::POST, &format!("{}/sandbox/{id}/stop", live.api), None).await;
    wait_for(live, &id, &["stopped"], Duration::from_secs(180)).await?;
    eprintln!("live step {}: stopped after {:?}", live.step, began.elapsed());
    let (status, body, _) = call(live, Method::GET, &format!("{}/files?path=.", toolbox(&sb)), None).await;
    let message = body["message"].as_str().unwrap_or_default();
    if status != 400 || !message.contains("Is the Sandbox started?") {
        return Err(format!("a stopped sandbox's toolbox answered {status} {body}"));
    }
    Ok(())
}

/// Not running, archived: 400 `failed to get runner info: …` (srv v0.190.0
/// apps/proxy/pkg/proxy/get_sandbox_target.go).
async fn step_archived_answer(live: &mut Live) -> Step {
    let sb = shared(live)?;
    let id = sb["id"].as_str().unwrap_or_default().to_string();
    let began = Instant::now();
    call(live, Method::POST, &format!("{}/sandbox/{id}/archive", live.api), None).await;
    wait_for(live, &id, &["archived"], Duration::from_secs(900)).await?;
    eprintln!("live step {}: archived after {:?}", live.step, began.elapsed());
    let (status, body, _) = call(live, Method::GET, &format!("{}/files?path=.", toolbox(&sb)), None).await;
    let message = body["message"].as_str().unwrap_or_default();
    if status != 400 || !message.starts_with("failed to get runner info") {
        return Err(format!("an archived sandbox's toolbox answered {status} {body}"));
    }
    Ok(())
}

/// Start timing: how long `POST /start` is held for an archived sandbox (expected: at once,
/// `restoring`) and for a stopped one (expected: up to 30 s, `started`), and how long until it
/// runs.
async fn step_start_timing(live: &mut Live) -> Step {
    let sb = shared(live)?;
    let id = sb["id"].as_str().unwrap_or_default().to_string();
    for from in ["archived", "stopped"] {
        if from == "stopped" {
            call(live, Method::POST, &format!("{}/sandbox/{id}/stop", live.api), None).await;
            wait_for(live, &id, &["stopped"], Duration::from_secs(180)).await?;
        }
        let began = Instant::now();
        let (status, v, _) = call(live, Method::POST, &format!("{}/sandbox/{id}/start", live.api), None).await;
        eprintln!(
            "live step {}: start of a {from} sandbox held {:?}: {status} {}",
            live.step,
            began.elapsed(),
            state_of(&v)
        );
        wait_for(live, &id, &["started"], Duration::from_secs(900)).await?;
        eprintln!("live step {}: a {from} sandbox started after {:?}", live.step, began.elapsed());
    }
    Ok(())
}

/// Not running, deleted: 401 from the toolbox proxy (srv v0.190.0 apps/proxy/pkg/proxy/auth.go),
/// and how long the delete stays `destroying`.
async fn step_deleted_answer(live: &mut Live) -> Step {
    let sb = shared(live)?;
    let id = sb["id"].as_str().unwrap_or_default().to_string();
    let began = Instant::now();
    delete(live, &id).await;
    wait_for(live, &id, &["404", "destroyed"], Duration::from_secs(300)).await?;
    eprintln!("live step {}: gone after {:?}", live.step, began.elapsed());
    live.sandbox = None;
    let (status, body, _) = call(live, Method::GET, &format!("{}/files?path=.", toolbox(&sb)), None).await;
    if status != 401 {
        return Err(format!("a deleted sandbox's toolbox answered {status} {body}"));
    }
    Ok(())
}

/// Real auto-stop: a sandbox with `autoStopInterval` 1 minute, marked active (`POST
/// /sandbox/{id}/last-activity`, as our keep-alive does) every 30 s for 3 minutes, still runs;
/// left alone, it stops (logged: after how long).
async fn step_auto_stop(live: &mut Live) -> Step {
    let sb = create(live, "autostop", json!({"autoStopInterval": 1})).await?;
    let id = sb["id"].as_str().unwrap_or_default().to_string();
    let outcome = async {
        wait_for(live, &id, &["started"], Duration::from_secs(300)).await?;
        for _ in 0..6 {
            tokio::time::sleep(Duration::from_secs(30)).await;
            call(live, Method::POST, &format!("{}/sandbox/{id}/last-activity", live.api), None).await;
        }
        let (_, v, _) = call(live, Method::GET, &format!("{}/sandbox/{id}", live.api), None).await;
        if state_of(&v) != "started" {
            return Err(format!("kept active for 3 minutes, yet {}", state_of(&v)));
        }
        let began = Instant::now();
        wait_for(live, &id, &["stopped"], Duration::from_secs(600)).await?;
        eprintln!("live step {}: left alone, stopped after {:?}", live.step, began.elapsed());
        Ok(())
    }
    .await;
    delete(live, &id).await;
    outcome
}

/// Rate-limit headers: the names and values of `X-RateLimit-*` and `Retry-After*` on an answer
/// (on a 429 Daytona names the throttler: `Retry-After-{throttler}`).
async fn step_rate_limit_headers(live: &mut Live) -> Step {
    let (status, _, headers) = call(live, Method::GET, &format!("{}/sandbox?limit=1", live.api), None).await;
    let limits: Vec<String> = headers
        .iter()
        .filter(|(k, _)| k.as_str().starts_with("x-ratelimit") || k.as_str().starts_with("retry-after"))
        .map(|(k, v)| format!("{k}: {}", v.to_str().unwrap_or("?")))
        .collect();
    eprintln!("live step {}: {status}, rate-limit headers {limits:?}", live.step);
    if status != 200 {
        return Err(format!("the list answered {status}"));
    }
    Ok(())
}

/// Quota message: a create asking for more disk than an organization may have; Daytona's
/// words are logged (expected a 400 or 403 naming the limit, as `Total disk limit exceeded…`).
async fn step_quota_message(live: &mut Live) -> Step {
    let body = json!({"buildInfo": {"dockerfileContent": "FROM python:3.12-slim\n"}, "disk": 100000});
    match create(live, "quota", body).await {
        Ok(v) => {
            delete(live, v["id"].as_str().unwrap_or_default()).await;
            Err("a create asking for 100,000 GiB of disk was accepted".into())
        }
        Err(e) if e.contains("answered 400") || e.contains("answered 403") => Ok(()),
        Err(e) => Err(e),
    }
}

/// Image build: a sandbox built from `python:3.12-slim` (`buildInfo`, as a runtime
/// `image:python:3.12-slim` makes it) passes `pending_build` and runs; the states and times
/// logged, then `python --version` in it.
async fn step_image_build(live: &mut Live) -> Step {
    let sb = create(live, "image", json!({"buildInfo": {"dockerfileContent": "FROM python:3.12-slim\n"}})).await?;
    let id = sb["id"].as_str().unwrap_or_default().to_string();
    let outcome = async {
        let sb = wait_for(live, &id, &["started", "build_failed", "error"], Duration::from_secs(900)).await?;
        if state_of(&sb) != "started" {
            return Err(format!("the build ended {}: {}", state_of(&sb), sb["errorReason"]));
        }
        let (status, v, _) = call(
            live,
            Method::POST,
            &format!("{}/process/execute", toolbox(&sb)),
            Some(json!({"command": "python --version", "timeout": 30})),
        )
        .await;
        if status != 200 || v["exitCode"] != 0 {
            return Err(format!("python --version: {status} {v}"));
        }
        Ok(())
    }
    .await;
    delete(live, &id).await;
    outcome
}

fn urlencode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

macro_rules! steps {
    ($($step:ident),* $(,)?) => {
        /// The checklist's steps, in the order they run (docs/daytona.md lists these names).
        const STEPS: &[&str] = &[$(stringify!($step)),*];

        async fn run_steps(live: &mut Live) -> Vec<(&'static str, Step)> {
            let mut out = Vec::new();
            $(
                live.step = stringify!($step);
                eprintln!("live step {}: begins", live.step);
                let outcome = $step(live).await;
                match &outcome {
                    Ok(()) => eprintln!("live step {}: ok", live.step),
                    Err(e) => eprintln!("live step {}: FAILED: {e}", live.step),
                }
                out.push((live.step, outcome));
            )*
            out
        }
    };
}

steps!(
    step_key_scopes,
    step_workspace_home,
    step_stopped_answer,
    step_archived_answer,
    step_start_timing,
    step_deleted_answer,
    step_auto_stop,
    step_rate_limit_headers,
    step_quota_message,
    step_image_build,
);

/// The live smoke checklist: SKIPPED without `DAYTONA_API_KEY`.
#[tokio::test]
async fn live_daytona_smoke_checklist() {
    let Ok(key) = std::env::var("DAYTONA_API_KEY") else {
        eprintln!("SKIPPED: live Daytona smoke checklist (DAYTONA_API_KEY is not set)");
        return;
    };
    let api = std::env::var("DAYTONA_API_URL").unwrap_or_else(|_| "https://app.daytona.io/api".into());
    let http = agenticos::sandbox::hosts::daytona::client::DaytonaClient::default_http().expect("http");
    let mut live = Live { http, api: api.trim_end_matches('/').to_string(), key, sandbox: None, step: "setup" };
    let outcomes = run_steps(&mut live).await;
    if let Some(sb) = live.sandbox.take() {
        delete(&live, sb["id"].as_str().unwrap_or_default()).await;
    }
    let failed: Vec<String> =
        outcomes.iter().filter_map(|(name, o)| o.as_ref().err().map(|e| format!("{name}: {e}"))).collect();
    assert!(failed.is_empty(), "live steps failed:\n{}", failed.join("\n"));
}

/// docs/daytona.md's checklist names exactly these steps, in this order: the checklist is this
/// test's code.
#[test]
fn the_live_checklist_in_the_docs_is_the_live_tests_steps() {
    let doc = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/daytona.md"))
        .expect("docs/daytona.md");
    let section = doc.split("### A real-account smoke checklist").nth(1).expect("the checklist's section");
    let section = section.split("\n## ").next().unwrap_or(section);
    let named: Vec<&str> = section
        .lines()
        .filter_map(|l| l.split_once(". **`").and_then(|(_, rest)| rest.split_once("`**")).map(|(name, _)| name))
        .collect();
    assert_eq!(named, STEPS, "the checklist's numbered steps must name the live test's steps, in order");
}
