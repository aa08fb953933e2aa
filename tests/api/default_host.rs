//! A broken host cannot become the default in one click (issue 30): making a host that does not
//! answer the default shows what is wrong and what would run there, and changes nothing until it
//! is confirmed; a working host becomes the default at once — on both databases, and the flow in
//! real Chromium.

use crate::browser::{self, Browser};
use crate::db_test;
use crate::helpers::TestApp;
use crate::peer;
use crate::support::browser_sign_in::sign_in;
use crate::support::Org;

/// The organization's default connection's name.
async fn default_name(app: &TestApp) -> String {
    app.scalar_strings("SELECT name FROM sandbox_connections WHERE is_default = 1").await.remove(0)
}

/// A host nothing listens on (`idle`) and a working one (`peer-…`, not the default), with the
/// working one made the default: (the idle one's id, the working one's name).
async fn hosts(app: &TestApp) -> (String, String) {
    let o = Org::new(app).await;
    let idle = app.insert_idle_sandboxd_connection("idle").await;
    let working = o.connect(peer::shared().await).await;
    // A working host becomes the default at once.
    let r = app.web.post_form(&format!("/sandboxes/{working}/default"), &[]).await;
    assert_eq!(r.status, 303, "{}", r.body);
    let name = default_name(app).await;
    assert!(name.starts_with("peer-"), "{name}");
    (idle, name)
}

db_test! {
    async fn making_a_host_that_does_not_answer_the_default_asks_first(app: TestApp) -> anyhow::Result<()> {
        let (idle, working) = hosts(&app).await;
        let asked = app.web.post_form(&format!("/sandboxes/{idle}/default"), &[]).await;
        assert_eq!(asked.status, 200, "{}", asked.body);
        assert!(asked.select_text("#make-default-problem").is_some_and(|t| t.contains("not working")), "{}", asked.body);
        assert!(asked.select_text("#make-default-what-runs").is_some_and(|t| t.contains("every new run")), "{}", asked.body);
        assert_eq!(default_name(&app).await, working, "nothing changes before it is confirmed");
        let confirmed = app.web.post_form(&format!("/sandboxes/{idle}/default"), &[("confirmed", "yes")]).await;
        assert_eq!(confirmed.status, 303, "{}", confirmed.body);
        assert_eq!(default_name(&app).await, "idle");
        Ok(())
    }
}

db_test! {
    async fn the_make_default_question_is_answered_in_the_browser(app: TestApp) -> anyhow::Result<()> {
        if !browser::browser_or_skip("the_make_default_question_is_answered_in_the_browser") {
            return Ok(());
        }
        let (idle, working) = hosts(&app).await;
        let b = Browser::start().await?;
        sign_in(&b, &app.address).await?;
        b.goto(&format!("{}/sandboxes", app.address)).await?;
        // Make default sits under the row's More menu.
        b.click(&format!("#connection-{idle} details.row-menu summary")).await?;
        b.click(&format!("#connection-{idle} form[action$='/default'] button")).await?;
        b.wait_for_text("#make-default-problem", "not working").await?;
        assert_eq!(default_name(&app).await, working);
        b.click("#make-default-anyway").await?;
        b.wait_for("#connections-table").await?;
        assert_eq!(default_name(&app).await, "idle");
        b.close().await
    }
}
