//! HTML: the API reference page.

use actix_web::web::Data;
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;

use super::Reference;
use crate::state::AppState;
use crate::web::{page, PageCaller, PageError, Shell};

#[derive(Template)]
#[template(path = "reference/api.html")]
pub struct ReferencePage {
    pub shell: Shell,
    pub reference: Reference,
}

/// Everyone signed in may read it (the document itself is public at `/api/v1/openapi.json`).
pub async fn index(_st: Data<AppState>, caller: PageCaller, req: HttpRequest) -> Result<HttpResponse, PageError> {
    let p = ReferencePage { shell: Shell::new(&caller, &req, "api"), reference: super::reference() };
    page(&p.shell, &p)
}
