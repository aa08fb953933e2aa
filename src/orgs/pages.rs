//! HTML: new organization, switching, the members page.

use std::collections::HashMap;

use actix_web::http::StatusCode;
use actix_web::web::{Data, Form, Path};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;
use serde::Deserialize;

use super::error::OrgError;
use super::invitations::error::InvitationError;
use super::invitations::model::{Invitation, InvitationRecord};
use super::invitations::service::{self as invitations, NewInvitation};
use super::model::{Member, OrgChoice, Role};
use super::service;
use crate::sandbox::workspaces::removal;
use crate::state::AppState;
use crate::web::filters::Choice;
use crate::web::{
    page, page_status, paths, redirect_with_flash, render_status, FieldErrors, PageCaller, PageError, Shell, SignedIn,
};
use crate::words::count;

#[derive(Template)]
#[template(path = "orgs/new.html")]
pub struct NewOrgPage {
    pub csrf_token: String,
    pub email: String,
    pub orgs: Vec<OrgChoice>,
    /// The person's pending invitations: someone without an organization lands here.
    pub invitations: Vec<InvitationRecord>,
    pub name: String,
    pub errors: FieldErrors,
}

pub async fn new_form(st: Data<AppState>, who: SignedIn) -> Result<HttpResponse, PageError> {
    let p = NewOrgPage {
        invitations: invitations::pending_for(&st.db, &who.email).await?,
        csrf_token: who.csrf_token,
        email: who.email,
        orgs: who.orgs,
        name: String::new(),
        errors: FieldErrors::new(),
    };
    render_status(StatusCode::OK, &p)
}

#[derive(Deserialize)]
pub struct NameForm {
    #[serde(default)]
    name: String,
}

pub async fn create(st: Data<AppState>, who: SignedIn, form: Form<NameForm>) -> Result<HttpResponse, PageError> {
    match service::create(&st.db, &who.user_id, &who.email, &form.name).await {
        Ok(org) => {
            service::switch(&st.db, &who.session_id, &who.user_id, &org.id).await?;
            Ok(redirect_with_flash(
                paths::HOME,
                "success",
                format!("Organization “{}” created. You are its owner.", org.name),
            ))
        }
        Err(OrgError::Invalid(errors)) => {
            let p = NewOrgPage {
                invitations: invitations::pending_for(&st.db, &who.email).await?,
                csrf_token: who.csrf_token,
                email: who.email,
                orgs: who.orgs,
                name: form.name.clone(),
                errors,
            };
            render_status(StatusCode::UNPROCESSABLE_ENTITY, &p)
        }
        Err(e) => Err(e.into()),
    }
}

#[derive(Deserialize)]
pub struct SwitchForm {
    #[serde(default)]
    organization_id: String,
}

pub async fn switch(st: Data<AppState>, who: SignedIn, form: Form<SwitchForm>) -> Result<HttpResponse, PageError> {
    service::switch(&st.db, &who.session_id, &who.user_id, &form.organization_id).await?;
    Ok(crate::web::see_other(paths::HOME))
}

#[derive(Template)]
#[template(path = "orgs/members.html")]
pub struct MembersPage {
    pub shell: Shell,
    pub members: Vec<Member>,
    pub roles: Vec<Role>,
    pub form_email: String,
    pub form_role: String,
    pub errors: FieldErrors,
    /// The organization's pending invitations.
    pub invitations: Vec<Invitation>,
    /// The invitation just created, with its link: shown on this response only.
    pub invited: Option<Invited>,
    pub caller_role: Role,
    /// How many personal (`user`) workspaces each person has, by user id: removing them deletes
    /// those.
    pub personal_workspaces: HashMap<String, usize>,
}

/// An invitation just created, as the members page shows it once.
pub struct Invited {
    pub invitation: Invitation,
    pub link: String,
    pub code: String,
}

impl MembersPage {
    /// Roles the caller may grant.
    fn grantable(caller: Role) -> Vec<Role> {
        Role::ALL.into_iter().filter(|r| !r.outranks(caller)).collect()
    }
    pub fn can_edit(&self, m: &Member) -> bool {
        !m.role.outranks(self.caller_role)
    }
    pub fn can_revoke(&self, i: &Invitation) -> bool {
        !i.role.outranks(self.caller_role)
    }
    /// The remove button's confirmation: who loses access, and which of their workspaces go.
    pub fn remove_confirm(&self, m: &Member) -> String {
        let n = self.personal_workspaces.get(&m.user_id).copied().unwrap_or(0);
        let workspaces = match n {
            0 => "They have no personal workspaces to delete.".to_string(),
            _ => format!(
                "Their personal (user) {} {} deleted with them, with every file in {}.",
                count(n, "workspace", "workspaces"),
                if n == 1 { "is" } else { "are" },
                if n == 1 { "it" } else { "them" }
            ),
        };
        format!("Remove {} from {}? They lose access at once. {workspaces}", m.email, self.shell.org_name)
    }
    pub fn role_choices(&self) -> Vec<Choice> {
        Choice::roles(&self.roles)
    }
}

async fn members_page(st: &AppState, caller: &PageCaller, req: &HttpRequest) -> Result<MembersPage, PageError> {
    let members = service::members(&st.db, caller).await?;
    let invitations = invitations::list(&st.db, caller).await?;
    Ok(MembersPage {
        shell: Shell::new(caller, req, "members"),
        members,
        roles: MembersPage::grantable(caller.role),
        form_email: String::new(),
        form_role: "member".into(),
        errors: FieldErrors::new(),
        invitations,
        invited: None,
        caller_role: caller.role,
        personal_workspaces: removal::user_workspace_counts(st, caller).await?,
    })
}

pub async fn index(st: Data<AppState>, caller: PageCaller, req: HttpRequest) -> Result<HttpResponse, PageError> {
    let p = members_page(&st, &caller, &req).await?;
    page(&p.shell, &p)
}

#[derive(Deserialize)]
pub struct MemberForm {
    #[serde(default)]
    email: String,
    #[serde(default)]
    role: String,
}

pub async fn add(
    st: Data<AppState>,
    caller: PageCaller,
    req: HttpRequest,
    form: Form<MemberForm>,
) -> Result<HttpResponse, PageError> {
    let f = form.into_inner();
    match invitations::invite(&st.db, &caller, NewInvitation { email: f.email.clone(), role: f.role.clone() }).await {
        // The link and its code are shown once, on this response, never again.
        Ok(created) => {
            let mut p = members_page(&st, &caller, &req).await?;
            p.invited = Some(Invited {
                link: paths::invitation_link(&st.config.http.public_url, &created.code),
                code: created.code,
                invitation: created.invitation,
            });
            page(&p.shell, &p)
        }
        Err(InvitationError::Invalid(errors)) => {
            let mut p = members_page(&st, &caller, &req).await?;
            p.form_email = f.email;
            p.form_role = f.role;
            p.errors = errors;
            page_status(StatusCode::UNPROCESSABLE_ENTITY, &p.shell, &p)
        }
        Err(e) => Err(e.into()),
    }
}

pub async fn revoke_invitation(
    st: Data<AppState>,
    caller: PageCaller,
    id: Path<String>,
) -> Result<HttpResponse, PageError> {
    let i = invitations::revoke(&st.db, &caller, &id).await?;
    Ok(redirect_with_flash(
        paths::MEMBERS,
        "success",
        format!("The invitation of {} was revoked; its link no longer works.", i.email),
    ))
}

#[derive(Deserialize)]
pub struct RoleForm {
    #[serde(default)]
    role: String,
}

pub async fn change_role(
    st: Data<AppState>,
    caller: PageCaller,
    id: Path<String>,
    form: Form<RoleForm>,
) -> Result<HttpResponse, PageError> {
    let m = service::change_role(&st.db, &caller, &id, &form.role).await?;
    Ok(redirect_with_flash(paths::MEMBERS, "success", format!("{} is now {}.", m.email, m.role)))
}

pub async fn remove(st: Data<AppState>, caller: PageCaller, id: Path<String>) -> Result<HttpResponse, PageError> {
    let (m, _) = service::remove_member_and_workspaces(&st, &caller, &id).await?;
    Ok(redirect_with_flash(paths::MEMBERS, "success", format!("{} was removed from this organization.", m.email)))
}
