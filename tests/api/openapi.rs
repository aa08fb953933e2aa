//! The OpenAPI document: every registered `/api/v1` route is in it and nothing else is; every
//! operation is described and lists its error responses as problems naming their type, exactly the
//! statuses its error type comes to through the table in `src/web/error.rs`; every field is
//! described, every time field with its unit; the file routes carry `application/octet-stream`.

use std::collections::BTreeSet;

use agenticos::web::openapi_errors::{ErrorType, Input, ERROR_TYPE};
use agenticos::web::Kind;

#[test]
fn every_api_route_is_documented() {
    let doc = serde_json::to_value(agenticos::api::document()).expect("serialises");
    let paths = doc["paths"].as_object().expect("paths");
    let mut missing = Vec::new();
    let routes = agenticos::api::routes();
    for r in &routes {
        let method = r.method.as_str().to_ascii_lowercase();
        if paths.get(r.path).and_then(|p| p.get(&method)).is_none() {
            missing.push(format!("{} {}", r.method, r.path));
        }
    }
    assert!(missing.is_empty(), "routes missing from /api/v1/openapi.json: {missing:?}");
    let documented: usize = paths.values().map(|p| p.as_object().map(|o| o.len()).unwrap_or(0)).sum();
    assert_eq!(documented, routes.len(), "the document lists operations no route serves");
    assert!(doc["openapi"].as_str().is_some_and(|v| v.starts_with("3.")));
}

crate::db_test! {
    async fn the_document_is_served(app: TestApp) {
        let r = app.web.get("/api/v1/openapi.json").await;
        assert_eq!(r.status, 200);
        assert!(r.json()["paths"]["/api/v1/me"]["get"].is_object());
    }
}

#[test]
fn every_operation_is_described_and_lists_its_error_responses_as_problems() {
    let doc = serde_json::to_value(agenticos::api::document()).expect("serialises");
    let mut undescribed = Vec::new();
    let mut without_errors = Vec::new();
    let mut not_problems = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("a path item") {
            let name = format!("{method} {path}");
            if op["description"].as_str().is_none_or(|d| d.trim().is_empty()) {
                undescribed.push(name.clone());
            }
            let responses = op["responses"].as_object().expect("responses");
            let errors: Vec<(&String, &serde_json::Value)> =
                responses.iter().filter(|(status, _)| status.as_str() >= "400").collect();
            if errors.is_empty() {
                without_errors.push(name.clone());
            }
            for (status, r) in errors {
                if r["content"]["application/problem+json"].is_null() {
                    not_problems.push(format!("{name} {status}"));
                }
            }
        }
    }
    assert!(undescribed.is_empty(), "without a description: {undescribed:?}");
    assert!(without_errors.is_empty(), "no error response listed: {without_errors:?}");
    assert!(not_problems.is_empty(), "an error response that is not application/problem+json: {not_problems:?}");
}

#[test]
fn the_file_routes_carry_their_bytes_as_application_octet_stream() {
    let doc = serde_json::to_value(agenticos::api::document()).expect("serialises");
    let files = &doc["paths"]["/api/v1/runs/{run_id}/workspace/files"];
    let media_types = |content: &serde_json::Value| -> Vec<String> {
        content.as_object().map(|o| o.keys().cloned().collect()).unwrap_or_default()
    };
    let read = &files["get"]["responses"]["200"]["content"];
    assert_eq!(media_types(read), ["application/octet-stream"], "GET answers the bytes: {read}");
    let write = &files["put"]["requestBody"];
    assert_eq!(media_types(&write["content"]), ["application/octet-stream"], "PUT takes the bytes: {write}");
    assert_eq!(write["required"], true);
    // Both name one schema: a string of any bytes, not a JSON array of numbers.
    for schema in [&read["application/octet-stream"]["schema"], &write["content"]["application/octet-stream"]["schema"]]
    {
        let name = schema["$ref"].as_str().and_then(|r| r.rsplit('/').next()).expect("a schema reference");
        let bytes = &doc["components"]["schemas"][name];
        assert_eq!((bytes["type"].as_str(), bytes["format"].as_str()), (Some("string"), Some("binary")), "{bytes}");
    }
    // A write answers 204 with no body; its refusals are problems.
    assert!(files["put"]["responses"]["204"]["content"].is_null());
    assert!(files["put"]["responses"]["413"]["content"]["application/problem+json"].is_object());
}

#[test]
fn every_error_response_names_the_problem_type_its_status_answers() {
    let doc = serde_json::to_value(agenticos::api::document()).expect("serialises");
    let types = |status: &str| -> &[&str] {
        match status {
            "400" => &["bad-request"],
            "401" => &["unauthenticated"],
            "403" => &["forbidden", "no-organization"],
            "404" => &["not-found"],
            "409" => &["conflict"],
            "410" => &["gone"],
            "413" => &["payload-too-large"],
            "422" => &["invalid-input"],
            "429" => &["too-many-requests"],
            "500" => &["internal"],
            "502" => &["bad-gateway", "store-failed"],
            "503" => &["unavailable"],
            "504" => &["store-timeout", "host-timeout"],
            _ => &[],
        }
    };
    let mut wrong = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("a path item") {
            for (status, r) in op["responses"].as_object().expect("responses") {
                if status.as_str() < "400" {
                    continue;
                }
                let description = r["description"].as_str().unwrap_or_default();
                let named = types(status)
                    .iter()
                    .any(|t| description.contains(&format!("`https://agenticos.dev/problems/{t}`")));
                if !named {
                    wrong.push(format!("{method} {path} {status}: {description:?}"));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "error responses that do not name their problem type: {wrong:#?}");
}

/// Every `$ref` anywhere in `v` (with where it stands), depth first.
fn refs_in(v: &serde_json::Value, at: &str, out: &mut Vec<(String, String)>) {
    match v {
        serde_json::Value::Object(o) => {
            for (k, child) in o {
                match (k.as_str(), child.as_str()) {
                    ("$ref", Some(r)) => out.push((at.to_string(), r.to_string())),
                    _ => refs_in(child, &format!("{at}/{k}"), out),
                }
            }
        }
        serde_json::Value::Array(a) => {
            for (i, child) in a.iter().enumerate() {
                refs_in(child, &format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// A schema registered under one name and referred to under another (a type moved into a shared
/// module, say) leaves a reference that points nowhere, and a client generated from the document
/// fails to build: every reference resolves to something the document holds.
#[test]
fn every_reference_points_at_something_the_document_holds() {
    let doc = serde_json::to_value(agenticos::api::document()).expect("serialises");
    let mut refs = Vec::new();
    refs_in(&doc, "#", &mut refs);
    assert!(refs.len() > 10, "the document refers to its schemas: {} references", refs.len());
    let dangling: Vec<_> = refs
        .iter()
        .filter(|(_, r)| {
            let Some(pointer) = r.strip_prefix('#') else { return true };
            doc.pointer(pointer).is_none()
        })
        .collect();
    assert!(dangling.is_empty(), "references that point nowhere (where, to what): {dangling:?}");
}

#[test]
fn every_field_of_every_schema_is_described() {
    let doc = serde_json::to_value(agenticos::api::document()).expect("serialises");
    let mut missing = Vec::new();
    for (name, schema) in doc["components"]["schemas"].as_object().expect("schemas") {
        for (field, p) in schema["properties"].as_object().into_iter().flatten() {
            // An optional reference carries its description in the `oneOf` branch of the reference.
            let branches = p["oneOf"].as_array().into_iter().flatten();
            let described = std::iter::once(p)
                .chain(branches)
                .any(|s| s["description"].as_str().is_some_and(|d| !d.trim().is_empty()));
            if !described {
                missing.push(format!("{name}.{field}"));
            }
        }
    }
    assert!(missing.is_empty(), "fields without a description: {missing:?}");
}

#[test]
fn every_time_field_says_its_unit() {
    let doc = serde_json::to_value(agenticos::api::document()).expect("serialises");
    let schemas = doc["components"]["schemas"].as_object().expect("schemas");
    let mut missing = Vec::new();
    let mut checked = 0;
    for (name, schema) in schemas {
        for (field, p) in schema["properties"].as_object().into_iter().flatten() {
            let is_time = field == "at"
                || ["_at", "_ms", "_seconds", "_timeout", "_ttl", "_after"].iter().any(|end| field.ends_with(end));
            if !is_time {
                continue;
            }
            checked += 1;
            let says_unit = p["description"]
                .as_str()
                .is_some_and(|d| ["millisecond", "seconds", "Seconds"].iter().any(|u| d.contains(u)));
            if !says_unit {
                missing.push(format!("{name}.{field}"));
            }
        }
    }
    assert!(missing.is_empty(), "time fields without their unit: {missing:?}");
    assert!(checked > 20, "the time fields were found ({checked})");
}

#[test]
fn the_new_list_routes_are_documented_with_their_parameters() {
    let doc = serde_json::to_value(agenticos::api::document()).expect("serialises");
    let names = |path: &str| -> Vec<String> {
        doc["paths"][path]["get"]["parameters"]
            .as_array()
            .map(|ps| ps.iter().filter_map(|p| p["name"].as_str().map(str::to_string)).collect())
            .unwrap_or_default()
    };
    assert_eq!(names("/api/v1/conversations"), ["limit", "offset"]);
    assert_eq!(names("/api/v1/runs"), ["agent_id", "conversation_id", "status", "limit", "offset"]);
    assert_eq!(
        names("/api/v1/sandbox-sessions/{connection_id}/{session_id}/events"),
        ["connection_id", "session_id", "after"]
    );
}

/// The kinds of the error type an operation's responses name (`x-error-type`): every type an
/// operation names is here once, so a new one fails the test below until it is added.
fn kinds_named(name: &str) -> Option<Vec<Kind>> {
    use agenticos::agents::error::AgentError;
    use agenticos::audit::error::AuditError;
    use agenticos::documents::error::DocumentError;
    use agenticos::orgs::error::OrgError;
    use agenticos::sandbox::connections::error::ConnectionError;
    use agenticos::sandbox::operations::error::OperationsError;
    use agenticos::sandbox::policy::error::PolicyError;
    use agenticos::sandbox::running::error::RunningError;
    use agenticos::sandbox::workspaces::error::WorkspaceError;
    use agenticos::sandbox::{connections, running, snapshots, workspaces};
    use agenticos::{agents, documents, orgs, tokens, vault};
    macro_rules! lookup {
        ($($t:ty),+ $(,)?) => {{
            $(if name == <$t as ErrorType>::name() {
                return Some(<$t as ErrorType>::kinds());
            })+
            None
        }};
    }
    lookup!(
        AgentError,
        AuditError,
        ConnectionError,
        DocumentError,
        OrgError,
        PolicyError,
        RunningError,
        WorkspaceError,
        (OperationsError, Input),
        OperationsError,
        (RunningError, Input),
        (agents::api::Reading, ConnectionError),
        (snapshots::api::Configuring, snapshots::api::OfAgent),
        (snapshots::api::Viewing, snapshots::api::OfAgent),
        agents::api::Listing,
        agents::api::Page,
        agents::api::Reading,
        agents::api::Starting,
        agents::api::Visible,
        connections::api::Deleting,
        connections::discovered_api::Discovering,
        connections::api::Listing,
        connections::api::Reading,
        documents::api::Listing,
        documents::api::Reading,
        orgs::api::Choosing,
        orgs::api::Founding,
        orgs::api::Inviting,
        orgs::api::Listing,
        orgs::api::Removing,
        orgs::invitations::api::Listing,
        orgs::invitations::api::Revoking,
        running::api::Listing,
        snapshots::api::Archive,
        snapshots::api::Listing,
        tokens::api::Creating,
        tokens::api::Listing,
        tokens::api::Revoking,
        vault::api::Changing,
        vault::api::Deleting,
        vault::api::Listing,
        vault::api::Reading,
        workspaces::api::Finishing,
        workspaces::api::Resolving,
        workspaces::removal_api::Removing,
    )
}

/// The 4xx and 5xx statuses an operation documents.
fn error_statuses(op: &serde_json::Value) -> BTreeSet<u16> {
    let responses = op["responses"].as_object().expect("responses");
    responses.keys().filter_map(|s| s.parse::<u16>().ok()).filter(|s| *s >= 400).collect()
}

#[test]
fn every_operation_documents_exactly_the_statuses_its_error_type_comes_to() {
    let doc = serde_json::to_value(agenticos::api::document()).expect("serialises");
    let mut wrong = Vec::new();
    let mut without_type = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("a path item") {
            let name = format!("{method} {path}");
            // Every error response but the guard's 401 was derived from one error type.
            let mut named = BTreeSet::new();
            for (status, r) in op["responses"].as_object().expect("responses") {
                if status.as_str() < "400" || status == "401" {
                    continue;
                }
                match r[ERROR_TYPE].as_str() {
                    Some(t) => named.insert(t.to_string()),
                    None => named.insert(format!("a hand-written {status} row")),
                };
            }
            let expected: BTreeSet<u16> = match named.iter().collect::<Vec<_>>().as_slice() {
                [] => {
                    without_type.push(name.clone());
                    BTreeSet::new()
                }
                [one] => match kinds_named(one) {
                    Some(kinds) => kinds.iter().map(|k| k.status().as_u16()).collect(),
                    None => {
                        wrong.push(format!("{name}: names {one}, which kinds_named does not know"));
                        continue;
                    }
                },
                many => {
                    wrong.push(format!("{name}: more than one error type: {many:?}"));
                    continue;
                }
            };
            let expected: BTreeSet<u16> = expected.into_iter().chain([401]).collect();
            let documented = error_statuses(op);
            if documented != expected {
                wrong.push(format!(
                    "{name} ({named:?}): documents {documented:?}, its error type comes to {expected:?}"
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "operations whose error responses are not their error type's: {wrong:#?}");
    // Only `me` answers nothing but the guard's 401.
    assert_eq!(without_type, ["get /api/v1/me"], "operations that name no error type");
}

#[test]
fn an_operation_documents_only_what_its_handler_can_meet() {
    let doc = serde_json::to_value(agenticos::api::document()).expect("serialises");
    let statuses = |method: &str, path: &str| error_statuses(&doc["paths"][path][method]);
    // Finishing a run touches no file and asks no host: refused for the caller's role (403), a run
    // that does not exist (404), and what fails (500) — no file's 400, 409, 410, 413 or 422, no
    // host's 429 or 502, no snapshot store's 504 (and, like everything that can fail on our side,
    // a database that does not answer: 503).
    assert_eq!(statuses("post", "/api/v1/runs/{run_id}/finish"), BTreeSet::from([401, 403, 404, 500, 503]));
    // Reading the run's briefing or state: also refused for a run that gets no workspace (409).
    for path in ["/api/v1/runs/{run_id}/workspace/briefing", "/api/v1/runs/{run_id}/workspace/state"] {
        assert_eq!(statuses("get", path), BTreeSet::from([401, 403, 404, 409, 500, 503]), "{path}");
    }
    // A file operation meets everything a workspace can come to.
    let read = statuses("get", "/api/v1/runs/{run_id}/workspace/files");
    for status in [400, 403, 404, 409, 410, 413, 429, 502, 504] {
        assert!(read.contains(&status), "reading a file can answer {status}: {read:?}");
    }
    let files = &doc["paths"]["/api/v1/runs/{run_id}/workspace/files"]["get"]["responses"];
    assert!(files["404"]["description"].as_str().is_some_and(|d| d.contains("/problems/not-found`")));
    // Its 502 names both problem types of that status (the host's and the snapshot store's).
    let bad_gateway = files["502"]["description"].as_str().unwrap_or_default();
    assert!(bad_gateway.contains("/problems/bad-gateway`") && bad_gateway.contains("/problems/store-failed`"));
    // Listing tokens has no id to miss and no input to refuse; revoking one has an id.
    assert_eq!(statuses("get", "/api/v1/tokens"), BTreeSet::from([401, 403, 500, 503]));
    assert!(statuses("delete", "/api/v1/tokens/{id}").contains(&404));
}
