//! The API reference as a page: the OpenAPI document (`crate::api::document`, the same one
//! `/api/v1/openapi.json` serves) read into operations grouped by tag — method, path,
//! description, parameters, request body, responses with their problem types — and the schemas
//! they name. Server-rendered: no viewer script, nothing from a CDN.

pub mod pages;

use actix_web::web;
use serde_json::{Map, Value};

use crate::web::error::Kind;
use crate::web::paths;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route(paths::API_REFERENCE, web::get().to(pages::index));
}

/// A run of text, or of code (what the document writes between backticks).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    pub text: String,
    pub code: bool,
}

/// Paragraphs of spans: blank lines part paragraphs, single line breaks are spaces.
pub type Prose = Vec<Vec<Span>>;

/// A type in words (`string`, `array of Entry`, `integer or null`), naming the schema it refers to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeWords {
    pub text: String,
    /// The first schema it names, for a link to it.
    pub schema: Option<String>,
}

impl TypeWords {
    /// The link to the schema it names, on this page.
    pub fn href(&self) -> Option<String> {
        self.schema.as_ref().map(|name| format!("#{}", anchor("schema", name)))
    }
}

#[derive(Debug, Clone)]
pub struct Parameter {
    pub name: String,
    /// `path`, `query` or `header`.
    pub location: String,
    pub required: bool,
    pub kind: TypeWords,
    pub description: Prose,
}

#[derive(Debug, Clone)]
pub struct Body {
    pub content_type: String,
    pub kind: Option<TypeWords>,
}

#[derive(Debug, Clone)]
pub struct Response {
    pub status: String,
    pub description: Prose,
    pub bodies: Vec<Body>,
    /// The problem types an error answers with (its `type`), for an `application/problem+json` body.
    pub problem_types: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct Operation {
    /// `GET`, `POST`, …
    pub method: String,
    pub path: String,
    /// The anchor of this operation (its operation id).
    pub anchor: String,
    pub summary: String,
    pub description: Prose,
    pub parameters: Vec<Parameter>,
    pub request_body: Vec<Body>,
    pub request_body_required: bool,
    pub responses: Vec<Response>,
}

impl Operation {
    /// The method's lower-case name, for its badge's class.
    pub fn method_class(&self) -> String {
        self.method.to_ascii_lowercase()
    }
}

#[derive(Debug, Clone)]
pub struct Tag {
    pub name: String,
    pub anchor: String,
    pub operations: Vec<Operation>,
}

#[derive(Debug, Clone)]
pub struct Property {
    pub name: String,
    pub required: bool,
    pub kind: TypeWords,
    pub description: Prose,
}

#[derive(Debug, Clone)]
pub struct Schema {
    pub name: String,
    pub anchor: String,
    pub description: Prose,
    pub kind: TypeWords,
    /// The values of an enumeration.
    pub values: Vec<String>,
    pub properties: Vec<Property>,
}

/// The whole reference.
#[derive(Debug, Clone)]
pub struct Reference {
    pub title: String,
    pub version: String,
    pub description: Prose,
    pub tags: Vec<Tag>,
    pub schemas: Vec<Schema>,
}

impl Reference {
    pub fn operation_count(&self) -> usize {
        self.tags.iter().map(|t| t.operations.len()).sum()
    }
}

/// The reference of this product's API.
pub fn reference() -> Reference {
    let doc = serde_json::to_value(crate::api::document()).unwrap_or(Value::Null);
    read(&doc)
}

const METHODS: [&str; 7] = ["get", "post", "put", "patch", "delete", "head", "options"];

/// Reads an OpenAPI 3 document (as JSON).
pub fn read(doc: &Value) -> Reference {
    let info = &doc["info"];
    let mut tags: Vec<Tag> = Vec::new();
    for (path, item) in object(&doc["paths"]) {
        for method in METHODS {
            let Some(op) = item.get(method).filter(|o| o.is_object()) else { continue };
            let operation = read_operation(method, path, op);
            let tag = op["tags"].get(0).and_then(Value::as_str).unwrap_or("other").to_string();
            match tags.iter_mut().find(|t| t.name == tag) {
                Some(t) => t.operations.push(operation),
                None => tags.push(Tag { anchor: anchor("tag", &tag), name: tag, operations: vec![operation] }),
            }
        }
    }
    tags.sort_by(|a, b| a.name.cmp(&b.name));
    let schemas = object(&doc["components"]["schemas"]).map(|(name, s)| read_schema(name, s)).collect();
    Reference {
        title: str_of(&info["title"]).to_string(),
        version: str_of(&info["version"]).to_string(),
        description: prose(str_of(&info["description"])),
        tags,
        schemas,
    }
}

fn read_operation(method: &str, path: &str, op: &Value) -> Operation {
    let summary = str_of(&op["summary"]);
    let description = match str_of(&op["description"]) {
        "" => summary,
        d => d,
    };
    let parameters = op["parameters"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| Parameter {
            name: str_of(&p["name"]).to_string(),
            location: str_of(&p["in"]).to_string(),
            required: p["required"].as_bool().unwrap_or(false),
            kind: type_words(&p["schema"]),
            description: prose(str_of(&p["description"])),
        })
        .collect();
    let mut responses: Vec<Response> = object(&op["responses"]).map(|(status, r)| read_response(status, r)).collect();
    responses.sort_by(|a, b| a.status.cmp(&b.status));
    let operation_id = str_of(&op["operationId"]);
    Operation {
        method: method.to_ascii_uppercase(),
        path: path.to_string(),
        anchor: anchor("op", if operation_id.is_empty() { path } else { operation_id }),
        summary: first_sentence(summary),
        description: prose(description),
        parameters,
        request_body: bodies(&op["requestBody"]["content"]),
        request_body_required: op["requestBody"]["required"].as_bool().unwrap_or(false),
        responses,
    }
}

fn read_response(status: &str, r: &Value) -> Response {
    let description = str_of(&r["description"]);
    let bodies = bodies(&r["content"]);
    let is_problem = bodies.iter().any(|b| b.content_type == "application/problem+json");
    let mut problem_types = problem_types_in(description);
    // Each type is shown once, on its own line: not again inside the description.
    let mut text = description.to_string();
    for t in &problem_types {
        for written in [format!(": `{t}`"), format!(" `{t}`"), format!("`{t}`")] {
            text = text.replace(&written, "");
        }
    }
    let text = text.trim().trim_end_matches(':').trim();
    if is_problem && problem_types.is_empty() {
        problem_types.extend(status.parse::<u16>().ok().and_then(kind_of_status).map(Kind::problem_type));
    }
    Response { status: status.to_string(), description: prose(text), bodies, problem_types }
}

fn bodies(content: &Value) -> Vec<Body> {
    object(content)
        .map(|(content_type, c)| Body {
            content_type: content_type.to_string(),
            kind: c.get("schema").filter(|s| !s.is_null()).map(type_words),
        })
        .collect()
}

fn read_schema(name: &str, s: &Value) -> Schema {
    let required: Vec<&str> = s["required"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    let properties = object(&s["properties"])
        .map(|(p, v)| Property {
            name: p.to_string(),
            required: required.contains(&p),
            kind: type_words(v),
            description: prose(description_of(v)),
        })
        .collect();
    Schema {
        name: name.to_string(),
        anchor: anchor("schema", name),
        description: prose(str_of(&s["description"])),
        kind: type_words(s),
        values: s["enum"].as_array().into_iter().flatten().map(value_words).collect(),
        properties,
    }
}

/// A property's description, also where utoipa puts it on the referenced branch of a nullable
/// reference (`oneOf: [{type: null}, {$ref, description}]`).
fn description_of(v: &Value) -> &str {
    match str_of(&v["description"]) {
        "" => v["oneOf"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|b| str_of(&b["description"]))
            .find(|d| !d.is_empty())
            .unwrap_or(""),
        d => d,
    }
}

/// A schema's type in words.
pub fn type_words(s: &Value) -> TypeWords {
    if let Some(r) = s["$ref"].as_str() {
        let name = r.rsplit('/').next().unwrap_or(r).to_string();
        return TypeWords { text: name.clone(), schema: Some(name) };
    }
    for key in ["oneOf", "anyOf", "allOf"] {
        if let Some(branches) = s[key].as_array() {
            let words: Vec<TypeWords> = branches.iter().map(type_words).collect();
            let schema = words.iter().find_map(|w| w.schema.clone());
            let joiner = if key == "allOf" { " and " } else { " or " };
            let text = words.iter().map(|w| w.text.as_str()).collect::<Vec<_>>().join(joiner);
            return TypeWords { text, schema };
        }
    }
    let base = match &s["type"] {
        Value::String(t) => t.clone(),
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" or "),
        _ if s.get("properties").is_some() => "object".to_string(),
        _ => "any".to_string(),
    };
    let mut words = match base.as_str() {
        "array" | "array or null" => {
            let items = type_words(&s["items"]);
            let text = format!("array of {}", items.text) + if base.ends_with("null") { " or null" } else { "" };
            TypeWords { text, schema: items.schema }
        }
        _ if s.get("additionalProperties").is_some_and(Value::is_object) => {
            let values = type_words(&s["additionalProperties"]);
            TypeWords { text: format!("map of {}", values.text), schema: values.schema }
        }
        _ => TypeWords { text: base, schema: None },
    };
    if let Some(format) = s["format"].as_str() {
        words.text.push_str(&format!(" ({format})"));
    }
    words
}

fn value_words(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The problem types (`https://agenticos.dev/problems/<slug>`) a description names.
fn problem_types_in(text: &str) -> Vec<String> {
    let prefix = Kind::NotFound.problem_type();
    let prefix = prefix.trim_end_matches(Kind::NotFound.slug());
    let mut out: Vec<String> = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find(prefix) {
        let after = &rest[i + prefix.len()..];
        let slug: String = after.chars().take_while(|c| c.is_ascii_lowercase() || *c == '-').collect();
        if !slug.is_empty() {
            let t = format!("{prefix}{slug}");
            if !out.contains(&t) {
                out.push(t);
            }
        }
        rest = after;
    }
    out
}

/// The kind of problem an error status answers with when its description names none.
fn kind_of_status(status: u16) -> Option<Kind> {
    [
        Kind::BadRequest,
        Kind::Unauthenticated,
        Kind::Forbidden,
        Kind::NotFound,
        Kind::Conflict,
        Kind::Gone,
        Kind::PayloadTooLarge,
        Kind::Invalid,
        Kind::TooManyRequests,
        Kind::Internal,
        Kind::BadGateway,
        Kind::Unavailable,
    ]
    .into_iter()
    .find(|k| k.status().as_u16() == status)
}

/// Text as paragraphs of text and code spans.
pub fn prose(text: &str) -> Prose {
    text.split("\n\n")
        .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|p| !p.is_empty())
        .map(|p| spans(&p))
        .collect()
}

fn spans(p: &str) -> Vec<Span> {
    p.split('`')
        .enumerate()
        .filter(|(_, t)| !t.is_empty())
        .map(|(i, t)| Span { text: t.to_string(), code: i % 2 == 1 })
        .collect()
}

/// The first sentence of a summary (up to the first `. ` or line break), for the contents.
fn first_sentence(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let end = flat.find(". ").map(|i| i + 1).or_else(|| flat.find(": ").map(|i| i + 1)).unwrap_or(flat.len());
    flat[..end].trim_end_matches(':').replace('`', "")
}

/// An anchor id: `prefix-` then letters, digits and dashes only.
fn anchor(prefix: &str, name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' })
        .collect::<String>()
        .split('-')
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("-");
    format!("{prefix}-{cleaned}")
}

fn object(v: &Value) -> impl Iterator<Item = (&str, &Value)> {
    v.as_object().into_iter().flat_map(Map::iter).map(|(k, v)| (k.as_str(), v))
}

fn str_of(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn every_operation_of_the_product_is_in_the_reference_once() {
        let r = reference();
        let routes = crate::api::routes();
        assert_eq!(r.operation_count(), routes.len());
        for route in routes {
            let found = r
                .tags
                .iter()
                .flat_map(|t| &t.operations)
                .filter(|o| o.method == route.method.as_str() && o.path == route.path)
                .count();
            assert_eq!(found, 1, "{} {}", route.method, route.path);
        }
        let anchors: std::collections::BTreeSet<&str> =
            r.tags.iter().flat_map(|t| &t.operations).map(|o| o.anchor.as_str()).collect();
        assert_eq!(anchors.len(), r.operation_count(), "anchors are unique");
        assert!(r.schemas.iter().any(|s| s.name == "Problem"));
    }

    #[test]
    fn types_read_as_words_and_name_their_schema() {
        let t = |v: Value| type_words(&v);
        assert_eq!(t(json!({"type": "string"})).text, "string");
        assert_eq!(t(json!({"type": ["integer", "null"], "format": "int64"})).text, "integer or null (int64)");
        let r = t(json!({"$ref": "#/components/schemas/Entry"}));
        assert_eq!((r.text.as_str(), r.schema.as_deref()), ("Entry", Some("Entry")));
        let a = t(json!({"type": "array", "items": {"$ref": "#/components/schemas/Entry"}}));
        assert_eq!((a.text.as_str(), a.schema.as_deref()), ("array of Entry", Some("Entry")));
        let n = t(json!({"oneOf": [{"type": "null"}, {"$ref": "#/components/schemas/SessionOwner"}]}));
        assert_eq!((n.text.as_str(), n.schema.as_deref()), ("null or SessionOwner", Some("SessionOwner")));
        assert_eq!(t(json!({"type": "object", "additionalProperties": {"type": "string"}})).text, "map of string");
    }

    #[test]
    fn descriptions_keep_their_code_and_paragraphs() {
        let p = prose("Closes a session:\nits files `stay`.\n\nSecond `a` b.");
        assert_eq!(p.len(), 2);
        assert_eq!(p[0][1], Span { text: "stay".into(), code: true });
        assert_eq!(p[0][0].text, "Closes a session: its files ");
        assert_eq!(first_sentence("Reads a file. Then more."), "Reads a file.");
    }

    #[test]
    fn an_error_response_names_its_problem_type() {
        let doc = json!({
            "info": {"title": "t", "version": "1"},
            "paths": {"/x/{id}": {"delete": {"tags": ["things"], "operationId": "del_x", "responses": {
                "404": {"description": "No such thing: `https://agenticos.dev/problems/not-found`.",
                    "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}},
                "409": {"description": "",
                    "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}},
                "204": {"description": "gone"}
            }}}},
            "components": {"schemas": {}}
        });
        let r = read(&doc);
        let op = &r.tags[0].operations[0];
        assert_eq!((op.method.as_str(), op.anchor.as_str()), ("DELETE", "op-del-x"));
        let types: Vec<(&str, Vec<String>)> =
            op.responses.iter().map(|r| (r.status.as_str(), r.problem_types.clone())).collect();
        let described: Vec<String> = op.responses[1].description.iter().flatten().map(|s| s.text.clone()).collect();
        assert_eq!(described, ["No such thing."], "the type is not repeated in the description");
        assert_eq!(
            types,
            [
                ("204", vec![]),
                ("404", vec!["https://agenticos.dev/problems/not-found".to_string()]),
                ("409", vec!["https://agenticos.dev/problems/conflict".to_string()]),
            ]
        );
    }
}
