//! The seam of host kinds (issue 48): [`kind::ConnectionKind`] and every question a capability
//! asks about a kind, each answered by an exhaustive `match` in `kind.rs`. Capabilities ask these
//! questions (or `match` a kind exhaustively where each kind runs its own code) and never compare
//! kinds with `==`: a kind added to the enum stops the compiler at every place that must decide
//! for it (`tests/api/architecture.rs` refuses a comparison or a `_ =>` on a kind anywhere else).
//! docs/architecture.md argues the choice of an exhaustive enum over a trait. [`error::HostError`]
//! is how a call to a host of any kind failed: each kind's client error converts into it, and
//! everything shared decides on it.

pub mod daytona;
pub mod dispatch;
pub mod error;
pub mod kind;
pub mod sandboxd;
pub mod state;
