//! HTML: new organization, switching, the members page.

pub mod confirm;

use actix_web::http::{header, StatusCode};
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
use crate::auth::reset;
use crate::state::AppState;
use crate::web::filters::Choice;
use crate::web::{
    page, page_status, paths, redirect_with_flash, render_status, FieldErrors, PageCaller, PageError, Shell, SignedIn,
};

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
    /// A password just reset: the member's e-mail and one-time password, shown on this response
    /// only.
    pub reset: Option<(String, String)>,
    /// A refused role change: the membership's id and why, shown in its row (where the click was).
    pub role_error: Option<(String, String)>,
    pub caller_role: Role,
    /// The owners' switch: members must use two-factor sign-in.
    pub requires_two_factor: bool,
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
    /// Only owners flip "Require two-factor sign-in for members".
    pub fn is_owner(&self) -> bool {
        self.caller_role == Role::Owner
    }
    pub fn can_revoke(&self, i: &Invitation) -> bool {
        !i.role.outranks(self.caller_role)
    }
    pub fn role_choices(&self) -> Vec<Choice> {
        Choice::roles(&self.roles)
    }
    /// Why this member's role change was refused, if it just was.
    pub fn role_error_of(&self, m: &Member) -> Option<&str> {
        self.role_error.as_ref().filter(|(id, _)| *id == m.id).map(|(_, message)| message.as_str())
    }
    /// Whether the caller is offered to reset this member's password (not their own).
    pub fn can_reset(&self, m: &Member) -> bool {
        self.can_edit(m) && m.email != self.shell.email
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
        reset: None,
        role_error: None,
        caller_role: caller.role,
        requires_two_factor: service::requires_two_factor(&st.db, &caller.org_id).await?,
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

/// Changes a member's role. A refusal (the last owner, someone who outranks the caller, a role
/// above theirs) is shown in that member's row, its select back at the stored role: htmx swaps
/// only the row, without scrolling, so the message is where the click was; without JavaScript
/// the whole page comes back with it.
pub async fn change_role(
    st: Data<AppState>,
    caller: PageCaller,
    req: HttpRequest,
    id: Path<String>,
    form: Form<RoleForm>,
) -> Result<HttpResponse, PageError> {
    let refusal = match service::change_role(&st.db, &st.token_callers, &caller, &id, &form.role).await {
        Ok(m) => return Ok(redirect_with_flash(paths::MEMBERS, "success", format!("{} is now {}.", m.email, m.role))),
        Err(e @ (OrgError::LastOwner(_) | OrgError::Outranked { .. } | OrgError::AboveOwnRole(_))) => e,
        Err(OrgError::Invalid(errors)) => {
            let message = errors.0.first().map(|f| f.message.clone()).unwrap_or_default();
            let mut p = members_page(&st, &caller, &req).await?;
            p.role_error = Some((id.to_string(), message));
            return row_refusal(StatusCode::UNPROCESSABLE_ENTITY, &id, &p);
        }
        Err(e) => return Err(e.into()),
    };
    let message = refusal.to_string();
    let mut p = members_page(&st, &caller, &req).await?;
    p.role_error = Some((id.to_string(), message));
    row_refusal(StatusCode::CONFLICT, &id, &p)
}

#[derive(Deserialize)]
pub struct TwoFactorForm {
    /// `on` when the box is ticked; absent when not.
    #[serde(default)]
    require_two_factor: String,
}

/// The owners' switch "Require two-factor sign-in for members".
pub async fn require_two_factor(
    st: Data<AppState>,
    caller: PageCaller,
    req: HttpRequest,
    form: Form<TwoFactorForm>,
) -> Result<HttpResponse, PageError> {
    let on = form.require_two_factor == "on";
    match crate::auth::two_factor::service::set_required(&st, &caller, on).await {
        Ok(()) => Ok(redirect_with_flash(
            paths::MEMBERS,
            "success",
            match on {
                true => "Two-factor sign-in is required: members without it are sent to set it up before anything else. API tokens are not concerned.",
                false => "Two-factor sign-in is up to each member again.",
            },
        )),
        Err(crate::auth::error::AuthError::Invalid(errors)) => {
            let mut p = members_page(&st, &caller, &req).await?;
            p.errors = errors;
            page_status(StatusCode::UNPROCESSABLE_ENTITY, &p.shell, &p)
        }
        Err(e) => Err(e.into()),
    }
}

/// The members page with a refusal in one member's row; htmx takes only that row from it.
fn row_refusal(status: StatusCode, membership_id: &str, p: &MembersPage) -> Result<HttpResponse, PageError> {
    let mut res = page_status(status, &p.shell, p)?;
    let row = format!("#member-{membership_id}");
    let headers = res.headers_mut();
    for (name, value) in
        [("hx-retarget", row.as_str()), ("hx-reselect", row.as_str()), ("hx-reswap", "outerHTML show:none")]
    {
        if let Ok(v) = header::HeaderValue::from_str(value) {
            headers.insert(header::HeaderName::from_static(name), v);
        }
    }
    Ok(res)
}

pub async fn remove(st: Data<AppState>, caller: PageCaller, id: Path<String>) -> Result<HttpResponse, PageError> {
    let (m, _) = service::remove_member_and_workspaces(&st, &caller, &id).await?;
    Ok(redirect_with_flash(paths::MEMBERS, "success", format!("{} was removed from this organization.", m.email)))
}

/// Resets a member's password: the one-time password is on this response only, never again.
pub async fn reset_password(
    st: Data<AppState>,
    caller: PageCaller,
    req: HttpRequest,
    id: Path<String>,
) -> Result<HttpResponse, PageError> {
    let r = reset::reset_member_password(&st.db, &caller, &id).await?;
    let mut p = members_page(&st, &caller, &req).await?;
    p.reset = Some((r.email, r.one_time_password));
    let mut res = page(&p.shell, &p)?;
    res.headers_mut().insert(header::CACHE_CONTROL, header::HeaderValue::from_static("no-store"));
    Ok(res)
}
