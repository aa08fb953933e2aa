//! Cross-cutting HTTP only: error rendering, request context, CSRF, the caller guard, paths,
//! assets, template filters.

pub mod assets;
pub mod body;
pub mod context;
pub mod csrf;
pub mod edge;
pub mod error;
pub mod error_cases;
pub mod error_frame;
pub mod extract;
pub mod filters;
pub mod guard;
pub mod htmx;
pub mod layout;
pub mod middleware;
pub mod openapi_errors;
pub mod page_error;
pub mod paths;
pub mod problem;
pub mod route;

pub use error::{AppError, FieldErrors, Kind};
pub use guard::{ApiCaller, ChoosingPassword, EnrollingTwoFactor, MaybeSignedIn, PageCaller, SignedIn};
pub use layout::{page, page_status, redirect_with_flash, Shell};
pub use page_error::{render, render_status, see_other, FormRefusal, PageError};
pub use problem::ApiError;
