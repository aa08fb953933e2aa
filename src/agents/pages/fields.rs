//! HTML: the agent form's fields that htmx refreshes on change — *Runtime* (what the chosen
//! connection's host allows right now) and *Session scope*.

use actix_web::http::StatusCode;
use actix_web::web::{Data, Query};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;
use serde::Deserialize;

use crate::agents::service::{self, RuntimeChoice};
use crate::state::AppState;
use crate::vocabulary::scope::Scope;
use crate::web::htmx::wants_fragment;
use crate::web::{paths, render_status, see_other, AppError, PageCaller, PageError};

/// What the *Runtime* field offers, with the host's refusal in the words a person reads.
pub struct RuntimeOffer {
    pub runtimes: Vec<String>,
    pub unavailable: Option<String>,
    pub is_state: bool,
}

impl From<RuntimeChoice> for RuntimeOffer {
    fn from(c: RuntimeChoice) -> Self {
        let unavailable = c.unavailable.map(|e| AppError::from(e).public_detail());
        RuntimeOffer { runtimes: c.runtimes, unavailable, is_state: c.is_state }
    }
}

/// One option of the *Runtime* select.
pub struct RuntimeOption {
    pub alias: String,
    /// False for a saved or typed alias the host does not allow right now.
    pub is_offered: bool,
}

/// The *Runtime* field: what the chosen connection's host allows right now.
#[derive(Template)]
#[template(path = "agents/_runtime_field.html")]
pub struct RuntimeFieldPartial {
    pub choice: RuntimeOffer,
    pub selected: String,
    pub error: Option<String>,
}

impl RuntimeFieldPartial {
    /// The host's runtimes, and the selected alias even when the host does not offer it (the
    /// input is kept; saving then says why).
    pub fn options(&self) -> Vec<RuntimeOption> {
        let mut out: Vec<RuntimeOption> =
            self.choice.runtimes.iter().map(|a| RuntimeOption { alias: a.clone(), is_offered: true }).collect();
        if !self.selected.is_empty() && !self.choice.runtimes.contains(&self.selected) {
            out.push(RuntimeOption { alias: self.selected.clone(), is_offered: false });
        }
        out
    }
    pub fn not_offered_note(&self) -> &'static str {
        if self.choice.is_state || self.choice.unavailable.is_some() {
            ""
        } else {
            " · not offered by this host right now"
        }
    }
}

/// The *Session scope* field; choosing `agent` shows who shares the files.
#[derive(Template)]
#[template(path = "agents/_scope_field.html")]
pub struct ScopeFieldPartial {
    pub selected: String,
    pub error: Option<String>,
}

impl ScopeFieldPartial {
    pub fn scopes(&self) -> [Scope; 5] {
        Scope::ALL
    }
    pub fn is_agent(&self) -> bool {
        Scope::parse(&self.selected) == Some(Scope::Agent)
    }
    /// What describes the select: its hint, and the warning the agent scope shows.
    pub fn hint_ids(&self) -> &'static str {
        if self.is_agent() {
            "agent-scope-hint agent-scope-warning"
        } else {
            "agent-scope-hint"
        }
    }
}

#[derive(Deserialize)]
pub struct RuntimeQuery {
    #[serde(default)]
    backend: String,
    #[serde(default)]
    connection_id: String,
    #[serde(default)]
    runtime: String,
}

/// The *Runtime* field for the chosen backend and connection (htmx, on change).
pub async fn runtime_field_partial(
    st: Data<AppState>,
    caller: PageCaller,
    req: HttpRequest,
    q: Query<RuntimeQuery>,
) -> Result<HttpResponse, PageError> {
    if !wants_fragment(&req) {
        return Ok(see_other(paths::AGENTS));
    }
    let q = q.into_inner();
    let conn = Some(q.connection_id.as_str()).filter(|c| !c.is_empty());
    let choice = service::runtime_choice(&st, &caller, &q.backend, conn).await?;
    render_status(StatusCode::OK, &RuntimeFieldPartial { choice: choice.into(), selected: q.runtime, error: None })
}

#[derive(Deserialize)]
pub struct ScopeQuery {
    #[serde(default)]
    scope: String,
}

/// The *Session scope* field for the chosen scope (htmx, on change): formatting only.
pub async fn scope_field_partial(
    _caller: PageCaller,
    req: HttpRequest,
    q: Query<ScopeQuery>,
) -> Result<HttpResponse, PageError> {
    if !wants_fragment(&req) {
        return Ok(see_other(paths::AGENTS));
    }
    render_status(StatusCode::OK, &ScopeFieldPartial { selected: q.into_inner().scope, error: None })
}
