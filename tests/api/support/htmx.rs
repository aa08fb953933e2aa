//! Pages as htmx asks for them and reads them.

use crate::helpers::{Client, Resp};

/// The `attr` attribute of every element matching `css`, in order.
pub(crate) fn attrs(r: &Resp, css: &str, attr: &str) -> Vec<String> {
    let sel = scraper::Selector::parse(css).expect("selector");
    r.html().select(&sel).filter_map(|e| e.value().attr(attr).map(str::to_string)).collect()
}

/// What htmx sends when it polls (not a boosted navigation).
pub(crate) async fn hx_get(client: &Client, path: &str) -> Resp {
    client.send(client.http.get(client.url(path)).header("HX-Request", "true")).await
}
