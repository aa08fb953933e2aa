//! The error responses of the OpenAPI document, derived from the one table in [`super::error`].
//!
//! An operation names the error type its handler answers with once, in its annotation:
//! `responses((status = 200, body = T), Problems<WorkspaceError>)`. Each capability error lists
//! one value of every case the table tells apart ([`super::error_cases`]); the table turns each
//! into its kind, exactly as it turns a handler's error into its answer; the kinds give one
//! `application/problem+json` response per status. An operation that meets only some cases of its
//! error names a narrower type instead ([`error_subset!`](crate::error_subset)).

use std::collections::BTreeMap;
use std::marker::PhantomData;

use utoipa::openapi::extensions::ExtensionsBuilder;
use utoipa::openapi::{ContentBuilder, Ref, RefOr, Response, ResponseBuilder};

use super::error::{AppError, FieldErrors, Kind};

/// The extension naming, on each error response, the error type it was derived from.
pub const ERROR_TYPE: &str = "x-error-type";

/// One value of every case of an error that the table in `error.rs` tells apart.
pub trait ErrorCases: Sized {
    fn cases() -> Vec<Self>;
}

/// What an operation's handler can answer with, named in its `responses(...)` as `Problems<Self>`.
pub trait ErrorType {
    /// The kinds it comes to, each once.
    fn kinds() -> Vec<Kind>;

    /// The name its error responses carry ([`ERROR_TYPE`]): its Rust path in this crate.
    fn name() -> String {
        std::any::type_name::<Self>().replace(concat!(env!("CARGO_CRATE_NAME"), "::"), "")
    }
}

impl<E: ErrorCases + Into<AppError>> ErrorType for E {
    fn kinds() -> Vec<Kind> {
        kinds_where::<E>(|_| true)
    }
}

/// A handler that answers with either of two errors.
impl<A: ErrorType, B: ErrorType> ErrorType for (A, B) {
    fn kinds() -> Vec<Kind> {
        once_each(A::kinds().into_iter().chain(B::kinds()))
    }
}

/// The kinds the table turns the cases of `E` that `keep` keeps into, each once. What can fail on
/// our side (`internal`) can also meet a database that does not answer (`unavailable`, 503): the
/// table turns an internal error whose cause is one into that ([`AppError::internal`]).
pub fn kinds_where<E: ErrorCases + Into<AppError>>(keep: impl Fn(&E) -> bool) -> Vec<Kind> {
    let mut kinds = once_each(E::cases().into_iter().filter(|e| keep(e)).map(|e| e.into().kind));
    if kinds.contains(&Kind::Internal) && !kinds.contains(&Kind::Unavailable) {
        kinds.push(Kind::Unavailable);
    }
    kinds
}

fn once_each(kinds: impl Iterator<Item = Kind>) -> Vec<Kind> {
    let mut out = Vec::new();
    for k in kinds {
        if !out.contains(&k) {
            out.push(k);
        }
    }
    out
}

/// A handler's own refusal of its input (a query parameter it reads itself): `invalid-input`.
pub struct Input;

impl ErrorType for Input {
    fn kinds() -> Vec<Kind> {
        vec![AppError::invalid(FieldErrors::new()).kind]
    }
}

/// An operation's error type when it meets only part of its capability's error:
/// `error_subset! { /// why  pub struct Name: Error only Error::A | Error::B(_) }` (just these
/// cases), or `... Error except Error::C { .. }` (all others, so a variant added to `Error` shows
/// up by itself). Their kinds still come from the table.
#[macro_export]
macro_rules! error_subset {
    ($(#[$attr:meta])* $vis:vis struct $name:ident: $error:ident only $cases:pat) => {
        $crate::error_subset!(@ $(#[$attr])* $vis $name, $error, |e| matches!(e, $cases));
    };
    ($(#[$attr:meta])* $vis:vis struct $name:ident: $error:ident except $cases:pat) => {
        $crate::error_subset!(@ $(#[$attr])* $vis $name, $error, |e| !matches!(e, $cases));
    };
    (@ $(#[$attr:meta])* $vis:vis $name:ident, $error:ident, $keep:expr) => {
        $(#[$attr])*
        $vis struct $name;

        impl $crate::web::openapi_errors::ErrorType for $name {
            fn kinds() -> Vec<$crate::web::error::Kind> {
                $crate::web::openapi_errors::kinds_where::<$error>($keep)
            }
        }
    };
}

/// `responses(..., Problems<E>)`: one `application/problem+json` response per status `E` comes to.
pub struct Problems<E>(PhantomData<E>);

impl<E: ErrorType> utoipa::IntoResponses for Problems<E> {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        let mut by_status: BTreeMap<u16, Vec<Kind>> = BTreeMap::new();
        for kind in E::kinds() {
            by_status.entry(kind.status().as_u16()).or_default().push(kind);
        }
        let name = E::name();
        by_status
            .into_iter()
            .map(|(status, kinds)| {
                let extensions = ExtensionsBuilder::new().add(ERROR_TYPE, name.clone()).build();
                let mut response = problem_response(&kinds);
                response.extensions = Some(extensions);
                (status.to_string(), response.into())
            })
            .collect()
    }
}

/// A problem response of one status: what each kind means, and its problem type.
pub fn problem_response(kinds: &[Kind]) -> Response {
    let description =
        kinds.iter().map(|k| format!("{}: `{}`.", meaning(*k), k.problem_type())).collect::<Vec<_>>().join(" Or: ");
    ResponseBuilder::new()
        .description(description)
        .content(
            "application/problem+json",
            ContentBuilder::new().schema(Some(Ref::from_schema_name("Problem"))).build(),
        )
        .build()
}

/// What a kind means to a client; the problem's `detail` says the case.
fn meaning(kind: Kind) -> &'static str {
    match kind {
        Kind::BadRequest => "Not possible as sent (a path outside the workspace, a folder for a file)",
        Kind::Unauthenticated => "No valid API token or session",
        Kind::TokenExpired => "The API token has expired",
        Kind::Forbidden => "The caller's role does not allow this (or, for a file, the sandbox's user may not)",
        Kind::NotFound => "No such thing in this organization, or the caller may not see it",
        Kind::Conflict => "Refused in the current state of things",
        Kind::Invalid => "Input refused, each field named in `errors`",
        Kind::HostCheckFailed => "The host failed its check, the reason at its field (`save_anyway` saves regardless)",
        Kind::TooManyRequests => "Too many at once: the host's session cap for the organization, or too many attempts",
        Kind::PayloadTooLarge => "Over a size limit",
        Kind::NeedsOrganization => "The caller belongs to no organization",
        Kind::PasswordChangeRequired => "The signed-in person has to choose their password first",
        Kind::TwoFactorRequired => {
            "The organization requires two-factor sign-in and the signed-in person has to set it up first"
        }
        Kind::Gone => "Gone for good",
        Kind::BadGateway => "The sandbox host could not be asked, or did not answer well",
        Kind::StoreFailed => "The snapshot store failed",
        Kind::StoreTimeout => "The snapshot store did not answer in time",
        Kind::HostTimeout => "The sandbox host did not answer, or the operation did not finish, in time",
        Kind::Unavailable => {
            "Temporarily unavailable: the database did not answer (`Retry-After` says when to try again)"
        }
        Kind::Internal => "Something went wrong on our side (`request_id` finds it in the log)",
    }
}

#[cfg(test)]
mod tests {
    use utoipa::IntoResponses;

    use super::*;
    use crate::sandbox::connections::error::ConnectionError;
    use crate::sandbox::workspaces::error::WorkspaceError;

    #[test]
    fn each_case_comes_to_the_kind_the_table_gives_it() {
        let workspace = WorkspaceError::kinds();
        // `Lost`, the store's deadline and a host at its cap: each a kind of its own.
        for kind in [Kind::Gone, Kind::StoreTimeout, Kind::TooManyRequests, Kind::Internal] {
            assert!(workspace.contains(&kind), "{kind:?} in {workspace:?}");
        }
        assert!(!workspace.contains(&Kind::Unauthenticated));
        // A failed check of a host before a save is told apart from other invalid input.
        let connection = ConnectionError::kinds();
        assert!(connection.contains(&Kind::HostCheckFailed) && connection.contains(&Kind::Invalid));
    }

    crate::error_subset! {
        struct Few: WorkspaceError only WorkspaceError::NotFound(_) | WorkspaceError::Lost
    }

    crate::error_subset! {
        struct Most: WorkspaceError except WorkspaceError::Lost | WorkspaceError::Host(_)
    }

    #[test]
    fn a_subset_keeps_only_its_cases_or_all_but_them() {
        assert_eq!(Few::kinds(), [Kind::NotFound, Kind::Gone]);
        let most = Most::kinds();
        assert!(!most.contains(&Kind::Gone) && !most.contains(&Kind::TooManyRequests), "{most:?}");
        assert!(most.contains(&Kind::StoreTimeout) && most.contains(&Kind::BadGateway), "{most:?}");
    }

    #[test]
    fn one_problem_response_per_status_names_its_error_type() {
        let responses = Problems::<(Few, Input)>::responses();
        assert_eq!(responses.keys().collect::<Vec<_>>(), ["404", "410", "422"]);
        let json = serde_json::to_value(&responses).expect("serialises");
        for (status, r) in json.as_object().expect("responses") {
            assert_eq!(r[ERROR_TYPE], "(web::openapi_errors::tests::Few, web::openapi_errors::Input)", "{status}");
            let schema = &r["content"]["application/problem+json"]["schema"]["$ref"];
            assert_eq!(schema, "#/components/schemas/Problem", "{status}");
        }
        let gone = json["410"]["description"].as_str().unwrap_or_default();
        assert!(gone.ends_with("`https://agenticos.dev/problems/gone`."), "{gone}");
    }

    #[test]
    fn a_status_of_two_kinds_names_both() {
        let json = serde_json::to_value(Problems::<WorkspaceError>::responses()).expect("serialises");
        let bad_gateway = json["502"]["description"].as_str().unwrap_or_default();
        assert!(bad_gateway.contains("/problems/bad-gateway`") && bad_gateway.contains("/problems/store-failed`"));
    }
}
