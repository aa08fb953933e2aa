//! Drive-like previews on a workspace's page, on SQLite and PostgreSQL: Markdown rendered and
//! sanitised, CSV as a table 200 rows a page, JSON indented, a Download beside every file,
//! a photo's thumbnail turned the way its EXIF says, and when each file changed, in words.

use base64::Engine as _;
use reqwest::Method;
use serde_json::json;

use crate::db_test;
use crate::support::documents::jpeg_turned;
use crate::support::{urlencode, Org};

/// A `run`-scoped `state` workspace holding `files`, and its id.
async fn workspace_with(o: &Org<'_>, files: &[(&str, &str)]) -> String {
    let agent = o.agent(json!({"name": "previewer", "backend": "state", "scope": "run"})).await;
    let run = o.run(&agent, None, json!({})).await;
    for (path, text) in files {
        assert_eq!(o.write(&run, path, text).await.status, 204, "{path}");
    }
    let page = o.call(Method::GET, "/api/v1/documents", None).await.json();
    page["groups"][0]["workspace"]["id"].as_str().unwrap_or_else(|| panic!("a group: {page}")).to_string()
}

db_test! {
    async fn markdown_csv_and_json_are_previewed_rendered_and_markdown_is_sanitised(app: TestApp) {
        let o = Org::new(&app).await;
        let csv: String = std::iter::once("n,square\n".to_string()).chain((1..=250).map(|i| format!("{i},{}\n", i * i))).collect();
        let id = workspace_with(&o, &[
            ("notes.md", "# Notes\n\n<script>alert(1)</script>\n\nSee <img src=x onerror=alert(1)> [the site](https://example.org) and [this](javascript:alert(1)).\n"),
            ("data/squares.csv", &csv),
            ("config.json", r#"{"name":"q3","values":[1,2],"nested":{"ok":true}}"#),
        ]).await;
        let preview = |path: &str, offset: u64| {
            let at = if offset > 0 { format!("&offset={offset}") } else { String::new() };
            format!("/documents/workspaces/{id}?path={}{at}", urlencode(path))
        };

        let md = app.web.get(&preview("notes.md", 0)).await;
        assert_eq!(md.status, 200);
        assert_eq!(md.select_text("#preview-markdown h1").as_deref(), Some("Notes"));
        assert!(md.select_all("#preview-markdown script, #preview-markdown img").is_empty(), "{}", md.body);
        let text = md.select_text("#preview-markdown").expect("rendered");
        assert!(text.contains("<script>alert(1)</script>") && text.contains("<img src=x onerror=alert(1)>"), "shown as text: {text}");
        assert_eq!(md.select_attr("#preview-markdown a[href='https://example.org']", "rel").as_deref(), Some("noopener noreferrer"));
        assert!(md.select_all("#preview-markdown a[href^='javascript']").is_empty(), "{}", md.body);
        assert_eq!(md.select_attr("#preview-markdown a[href='#']", "rel").as_deref(), Some("noopener noreferrer"));

        let table = app.web.get(&preview("data/squares.csv", 0)).await;
        assert_eq!(table.select_all("#preview-table thead th"), ["n", "square"]);
        let rows = table.select_all("#preview-table tbody tr");
        assert_eq!(rows.len(), 200);
        assert_eq!(table.select_text("#preview-position").as_deref(), Some("Rows 1–200 of 250"));
        assert_eq!(table.select_attr("#preview-next", "href"), Some(preview("data/squares.csv", 201)));
        let rest = app.web.get(&preview("data/squares.csv", 201)).await;
        assert_eq!(rest.select_all("#preview-table thead th"), ["n", "square"]);
        assert_eq!(rest.select_all("#preview-table tbody tr").len(), 50);
        assert_eq!(rest.select_all("#preview-table tbody tr:last-child td"), ["250", "62500"]);
        assert_eq!(rest.select_text("#preview-position").as_deref(), Some("Rows 201–250 of 250"));
        assert!(rest.select_text("#preview-next").is_none());

        let js = app.web.get(&preview("config.json", 0)).await;
        assert_eq!(
            js.select_text("#preview-json").as_deref(),
            Some("{\n  \"name\": \"q3\",\n  \"values\": [\n    1,\n    2\n  ],\n  \"nested\": {\n    \"ok\": true\n  }\n}")
        );

        // Every file in the tree can be downloaded without opening it.
        let download = js.select_attr("#workspace-tree li[data-path='data/squares.csv'] a[download]", "href").expect("a Download");
        let got = app.web.get(&download).await;
        assert_eq!(got.status, 200);
        assert!(got.header("content-disposition").is_some_and(|d| d.starts_with("attachment")));
        assert_eq!(got.body, csv);
    }
}

db_test! {
    async fn a_photo_turned_by_its_exif_has_a_thumbnail_standing_that_way(app: TestApp) {
        let o = Org::new(&app).await;
        let agent = o.agent(json!({"name": "camera", "backend": "state", "scope": "run"})).await;
        let run = o.run(&agent, None, json!({})).await;
        let url = o.app.web.url(&format!("/api/v1/runs/{run}/workspace/files?path=photo.jpg"));
        let put = o.app.web.send(reqwest::Client::new().put(url).bearer_auth(&o.token).body(jpeg_turned(640, 320))).await;
        assert_eq!(put.status, 204);
        let page = o.call(Method::GET, "/api/v1/documents", None).await.json();
        let thumb = page["tiles"][0]["thumbnail"].as_str().unwrap_or_else(|| panic!("a thumbnail: {page}"));
        let b64 = thumb.strip_prefix("data:image/webp;base64,").expect("webp");
        let bytes = base64::engine::general_purpose::STANDARD.decode(b64).expect("base64");
        let img = image::load_from_memory(&bytes).expect("decodes");
        assert_eq!((img.width(), img.height()), (64, 128), "640×320 turned stands 320×640, fitted to 128 high");
    }
}

db_test! {
    async fn a_tile_says_who_put_the_file_there_and_when_in_words_with_the_full_time_on_hover(app: TestApp) {
        let o = Org::new(&app).await;
        workspace_with(&o, &[("uploads/brief.txt", "Summarise the quarter.")]).await;
        let page = app.web.get("/documents").await;
        assert_eq!(page.status, 200);
        let tile = "#documents-tiles li[data-path='uploads/brief.txt']";
        let meta = page.select_text(&format!("{tile} .tile-meta")).expect("a tile");
        assert!(meta.starts_with("attached by a person · previewer · "), "{meta}");
        let ago = page.select_text(&format!("{tile} time.file-when")).expect("when");
        assert!(ago.ends_with(" s ago") || ago.ends_with(" min ago"), "{ago}");
        let full = page.select_attr(&format!("{tile} time.file-when"), "title").expect("the full time");
        assert!(full.len() == 23 && full.ends_with(" UTC"), "{full}");
    }
}
