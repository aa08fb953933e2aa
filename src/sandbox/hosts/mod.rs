//! The seam of host kinds (issue 48): [`kind::ConnectionKind`] and every question a capability
//! asks about a kind, each answered by an exhaustive `match` in `kind.rs`; one folder per kind
//! ([`sandboxd`], [`daytona`], and [`state`] for a workspace without a host) holding its client,
//! its workspace backend and its pieces of the capabilities, each piece in a module named after
//! the capability it serves; and [`dispatch`], where a capability reaches a kind's code through
//! one exhaustive `match`. Capabilities ask the questions or call `dispatch` and never compare
//! kinds: a kind added to the enum stops the compiler at every place that must decide for it
//! (`tests/api/architecture.rs` refuses a kind in an arm or a comparison anywhere else, and a
//! kind folder importing another).
//! docs/architecture.md argues the choice of an exhaustive enum over a trait. [`error::HostError`]
//! is how a call to a host of any kind failed: each kind's client error converts into it, and
//! everything shared decides on it.

pub mod daytona;
pub mod dispatch;
pub mod error;
pub mod kind;
pub mod sandboxd;
pub mod state;
