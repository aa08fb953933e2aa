//! HTML: the policy panel of one connection.

use actix_web::web::{Data, Path};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;

use super::model::PolicyPanel;
use super::service;
use crate::state::AppState;
use crate::web::{page, PageCaller, PageError, Shell};

#[derive(Template)]
#[template(path = "sandbox/policy/show.html")]
pub struct PolicyPage {
    pub shell: Shell,
    pub panel: PolicyPanel,
}

pub async fn show(
    st: Data<AppState>,
    caller: PageCaller,
    req: HttpRequest,
    id: Path<String>,
) -> Result<HttpResponse, PageError> {
    let panel = service::panel(&st, &caller, &id).await?;
    let shell = Shell::new(&caller, &req, "sandboxes");
    page(&shell, &PolicyPage { shell: shell.clone(), panel })
}
