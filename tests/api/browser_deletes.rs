//! Real Chromium: deleting a conversation from its page — the dialog says what is removed and
//! where, and confirming purges its sandbox at the host — on SQLite and PostgreSQL.

use crate::browser::{self, Browser};
use crate::db_test;
use crate::support::browser_sign_in::sign_in;
use crate::support::{service_agent, Org};

db_test! {
    async fn the_conversation_delete_dialog_says_what_goes_where_and_confirming_purges_the_sandbox(app: TestApp) -> anyhow::Result<()> {
        if !browser::browser_or_skip("the_conversation_delete_dialog_says_what_goes_where_and_confirming_purges_the_sandbox") {
            return Ok(());
        }
        let peer = crate::peer::shared().await;
        let o = Org::new(&app).await;
        o.connect(peer).await;
        let agent = o.agent(service_agent("talker", "conversation")).await;
        let (conv, key) = o.conversation_with_files(&agent).await;

        let b = Browser::start_with_args(&["--window-size=1440,1000"]).await?;
        sign_in(&b, &app.address).await?;
        b.goto(&format!("{}/conversations/{conv}", app.address)).await?;
        b.click("#conversation-delete").await?;
        let what = b.wait_for_text("dialog#conversation-delete-dialog[open] #conversation-delete-what", "destroyed").await?;
        let host = format!("peer-{}", peer.port());
        assert!(what.contains("1 workspace") && what.contains("1 sandbox is destroyed") && what.contains(&host), "{what}");
        b.click("#conversation-delete-confirm").await?;
        b.wait_for_text("#flash", "Conversation deleted").await?;
        let flash = b.wait_for_text("#flash", "destroyed at its host").await?;
        assert!(flash.contains("1 workspace"), "{flash}");
        assert!(!peer.workspace_root.join(&key).exists(), "purged at the host");
        assert_eq!(app.count("sandbox_tombstones").await, 0);
        assert_eq!(app.count("conversations").await, 0);
        b.close().await
    }
}
