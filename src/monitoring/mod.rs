//! What an operator watches: `GET /metrics` for Prometheus (off unless `AGENTICOS_METRICS=1`),
//! `GET /api/v1/health` for scripts, and the figures the Home page answers "is everything OK?"
//! with. The metrics themselves are named and kept in `crate::instruments`.

pub mod api;
pub mod metrics_api;
pub mod model;
pub mod service;
pub mod store;
pub mod sweeps;

use actix_web::web;

/// `/metrics` on the main address (it answers only with `AGENTICOS_METRICS_TOKEN`).
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/metrics", web::get().to(metrics_api::on_main_address));
}

/// `/metrics` on its own address (`AGENTICOS_METRICS_BIND`): nothing else is served there.
pub fn own_address_routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/metrics", web::get().to(metrics_api::on_own_address));
}
