//! HTML: the confirmations of the members page's Remove and Reset password, in the console's own
//! dialog (htmx puts it into the page's dialog slot; without JavaScript, or opened directly, a
//! page of its own), as other destructive actions confirm: what happens, to whom, then the
//! button that does it.

use actix_web::web::{Data, Path};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;

use crate::orgs::error::OrgError;
use crate::orgs::model::Member;
use crate::orgs::service;
use crate::sandbox::workspaces::removal;
use crate::state::AppState;
use crate::web::{page, paths, render, PageCaller, PageError, Shell};
use crate::words::count;

/// What is confirmed: its title, what happens, where it posts and its button.
#[derive(Template)]
#[template(path = "orgs/_member_confirm.html")]
pub struct ConfirmForm {
    pub csrf_token: String,
    pub id: &'static str,
    pub title: String,
    pub what: String,
    pub action: String,
    pub button: &'static str,
}

/// The confirmation as a modal dialog.
#[derive(Template)]
#[template(path = "orgs/_member_confirm_dialog.html")]
pub struct ConfirmDialog {
    pub form: ConfirmForm,
}

/// The confirmation as a page of its own.
#[derive(Template)]
#[template(path = "orgs/member_confirm.html")]
pub struct ConfirmPage {
    pub shell: Shell,
    pub form: ConfirmForm,
}

/// What removing `m` from `org` does: who loses access, and which of their workspaces go.
pub fn remove_words(m: &Member, org: &str, personal_workspaces: usize) -> String {
    let workspaces = match personal_workspaces {
        0 => "They have no personal workspaces to delete.".to_string(),
        n => format!(
            "Their personal (user) {} {} deleted with them, with every file in {}.",
            count(n, "workspace", "workspaces"),
            if n == 1 { "is" } else { "are" },
            if n == 1 { "it" } else { "them" }
        ),
    };
    format!("{} loses access to {org} at once. {workspaces}", m.email)
}

/// The member `id` of the caller's organization, when the caller may change them: another
/// organization's or an unknown membership is not found, one who outranks the caller forbidden.
async fn member(st: &AppState, caller: &PageCaller, id: &str) -> Result<Member, PageError> {
    let m = service::members(&st.db, caller).await?.into_iter().find(|m| m.id == id).ok_or(OrgError::NotFound)?;
    if m.role.outranks(caller.role) {
        return Err(OrgError::Forbidden.into());
    }
    Ok(m)
}

/// The confirmation of Remove.
pub async fn remove_form(
    st: Data<AppState>,
    caller: PageCaller,
    req: HttpRequest,
    id: Path<String>,
) -> Result<HttpResponse, PageError> {
    let m = member(&st, &caller, &id).await?;
    let n = removal::user_workspace_counts(&st, &caller).await?.get(&m.user_id).copied().unwrap_or(0);
    let form = ConfirmForm {
        csrf_token: caller.csrf_token.clone(),
        id: "member-remove",
        title: format!("Remove {} from {}?", m.email, caller.org_name),
        what: remove_words(&m, &caller.org_name, n),
        action: paths::member_delete(&m.id),
        button: "Remove member",
    };
    answer(&caller, &req, form)
}

/// The confirmation of Reset password.
pub async fn reset_form(
    st: Data<AppState>,
    caller: PageCaller,
    req: HttpRequest,
    id: Path<String>,
) -> Result<HttpResponse, PageError> {
    let m = member(&st, &caller, &id).await?;
    let form = ConfirmForm {
        csrf_token: caller.csrf_token.clone(),
        id: "member-reset",
        title: format!("Reset the password of {}?", m.email),
        what: "Each of their sign-ins ends at once, and they sign in with a one-time password shown to you once, then choose their own.".into(),
        action: paths::member_password_reset(&m.id),
        button: "Reset password",
    };
    answer(&caller, &req, form)
}

fn answer(caller: &PageCaller, req: &HttpRequest, form: ConfirmForm) -> Result<HttpResponse, PageError> {
    if crate::web::htmx::wants_fragment(req) {
        return render(&ConfirmDialog { form });
    }
    let shell = Shell::new(caller, req, "members");
    page(&shell, &ConfirmPage { shell: shell.clone(), form })
}
