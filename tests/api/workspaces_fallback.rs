//! File operations the host hands back (409) go through the sandbox's shell, as the client
//! library does: symbolic links, native files off, files over the host's native limit. Against
//! the real sandboxd peer, on SQLite and PostgreSQL; each operation is one recorded row either way.

use reqwest::Method;
use serde_json::{json, Value};

use crate::db_test;
use crate::helpers::Resp;
use crate::peer::{self, Peer, PeerOptions};
use crate::support::{row, service_agent, urlencode, Org};

/// `PUT …/workspace/files` with raw bytes.
async fn put_bytes(o: &Org<'_>, run: &str, path: &str, bytes: Vec<u8>) -> Resp {
    let url = o.app.web.url(&format!("/api/v1/runs/{run}/workspace/files?path={}", urlencode(path)));
    o.app.web.send(reqwest::Client::new().put(url).bearer_auth(&o.token).body(bytes)).await
}

/// `GET …/workspace/files`: the status and the exact bytes.
async fn get_bytes(o: &Org<'_>, run: &str, path: &str) -> (u16, Vec<u8>) {
    let url = o.app.web.url(&format!("/api/v1/runs/{run}/workspace/files?path={}", urlencode(path)));
    let r = reqwest::Client::new().get(url).bearer_auth(&o.token).send().await.expect("read");
    let status = r.status().as_u16();
    (status, r.bytes().await.expect("bytes").to_vec())
}

async fn stat(o: &Org<'_>, run: &str, path: &str) -> Resp {
    o.ws(run, Method::GET, &format!("stat?path={path}"), None).await
}

/// What a problem answer says, without its request id: (status, type, detail).
fn problem(r: &Resp, status: u16) -> Value {
    let p = r.problem(status);
    json!([p["status"], p["type"], p["detail"]])
}

/// Bytes no text decoding survives: NUL, bytes that are not UTF-8, a lone continuation byte.
fn binary() -> Vec<u8> {
    vec![0, 255, 254, 0, b'a', 0x80, b'\n', 0xC3, 0x28, 0, b'\r']
}

/// `len` bytes of a pattern that is not a repetition of a base64 quantum.
fn big(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 % 251) as u8).collect()
}

/// The same file operations on `peer` (native on, off, or with a small native limit): what each
/// answered, and the rows the run recorded.
async fn scenario(o: &Org<'_>, peer: &Peer) -> (Vec<(String, Value)>, Vec<(String, String, bool, String)>) {
    let connection = o.connect(peer).await;
    let name = format!("files-{}", peer.port());
    let agent = o.agent(json!({"name": name, "backend": "service", "scope": "run", "connection_id": connection})).await;
    let run = o.run(&agent, None, json!({})).await;
    let mut seen: Vec<(String, Value)> = Vec::new();
    let mut note = |what: &str, v: Value| seen.push((what.to_string(), v));

    assert_eq!(put_bytes(o, &run, "bin/data.bin", binary()).await.status, 204);
    let (status, bytes) = get_bytes(o, &run, "bin/data.bin").await;
    assert_eq!((status, bytes), (200, binary()), "binary bytes round-trip");
    // More than one write command and more than one read command through the shell.
    let large = big(5 * 1024 * 1024 + 3);
    assert_eq!(put_bytes(o, &run, "large.bin", large.clone()).await.status, 204);
    let (status, bytes) = get_bytes(o, &run, "large.bin").await;
    assert_eq!(status, 200);
    assert!(bytes == large, "5 MiB round-trip: {} bytes back", bytes.len());
    // Replacing a file keeps its permission bits; an empty file is a file.
    assert_eq!(o.exec(&run, "chmod 751 bin/data.bin").await.json()["exit_code"], 0);
    assert_eq!(put_bytes(o, &run, "bin/data.bin", b"second".to_vec()).await.status, 204);
    let mode = o.exec(&run, "stat -c %a bin/data.bin").await.json();
    note("mode kept", mode["stdout"].clone());
    assert_eq!(put_bytes(o, &run, "empty.txt", Vec::new()).await.status, 204);
    note("empty read", json!(get_bytes(o, &run, "empty.txt").await));

    for path in ["bin/data.bin", "bin", "", "empty.txt"] {
        note(&format!("stat {path}"), o.ws(&run, Method::GET, &format!("stat?path={path}"), None).await.json());
    }
    note("stat missing", problem(&o.ws(&run, Method::GET, "stat?path=missing", None).await, 404));
    note("stat under a file", problem(&o.ws(&run, Method::GET, "stat?path=bin/data.bin/x", None).await, 400));

    let mkdir = |path: &str| json!({"path": path});
    assert_eq!(o.ws(&run, Method::POST, "mkdir", Some(mkdir("a/b/c"))).await.status, 204);
    assert_eq!(o.ws(&run, Method::POST, "mkdir", Some(mkdir("a/b/c"))).await.status, 204, "mkdir -p");
    note("mkdir over a file", problem(&o.ws(&run, Method::POST, "mkdir", Some(mkdir("bin/data.bin"))).await, 409));
    note("mkdir under a file", problem(&o.ws(&run, Method::POST, "mkdir", Some(mkdir("bin/data.bin/x"))).await, 400));
    note("write a folder", problem(&put_bytes(o, &run, "bin", b"x".to_vec()).await, 400));
    note("write under a file", problem(&put_bytes(o, &run, "bin/data.bin/x", b"x".to_vec()).await, 400));
    note("read a folder", problem(&o.read(&run, "bin").await, 400));
    note("read missing", problem(&o.read(&run, "missing").await, 404));
    note("ls root", o.ws(&run, Method::GET, "ls", None).await.json());
    note("ls bin", o.ws(&run, Method::GET, "ls?path=bin", None).await.json());
    note("ls a file", problem(&o.ws(&run, Method::GET, "ls?path=bin/data.bin", None).await, 400));
    note("ls missing", problem(&o.ws(&run, Method::GET, "ls?path=missing", None).await, 404));
    assert_eq!(o.ws(&run, Method::POST, "remove", Some(mkdir("a"))).await.status, 204, "a folder and all in it");
    assert_eq!(o.ws(&run, Method::POST, "remove", Some(mkdir("empty.txt"))).await.status, 204);
    note("remove missing", problem(&o.ws(&run, Method::POST, "remove", Some(mkdir("a"))).await, 404));
    note("ls root after", o.ws(&run, Method::GET, "ls", None).await.json());
    // No temporary or staged file is left behind, in the workspace or in the sandbox's TMPDIR.
    let left = o.exec(&run, "ls -A . bin \"${TMPDIR:-/tmp}\" | grep -c agenticos").await.json();
    note("nothing left", left["stdout"].clone());
    o.finish(&run).await;
    (seen, o.rows(&run).await)
}

fn expected_rows() -> Vec<(String, String, bool, String)> {
    let large = format!("{} bytes", 5 * 1024 * 1024 + 3);
    vec![
        row("write", "/workspace/bin/data.bin", true, "11 bytes"),
        row("read", "/workspace/bin/data.bin", true, "11 bytes"),
        row("write", "/workspace/large.bin", true, &large),
        row("read", "/workspace/large.bin", true, &large),
        row("execute", "chmod 751 bin/data.bin", true, "exit 0"),
        row("write", "/workspace/bin/data.bin", true, "6 bytes"),
        row("execute", "stat -c %a bin/data.bin", true, "exit 0"),
        row("write", "/workspace/empty.txt", true, "0 bytes"),
        row("read", "/workspace/empty.txt", true, "0 bytes"),
        row("mkdir", "/workspace/a/b/c", true, ""),
        row("mkdir", "/workspace/a/b/c", true, ""),
        row("mkdir", "/workspace/bin/data.bin", false, "already exists"),
        row("mkdir", "/workspace/bin/data.bin/x", false, "not a directory"),
        row("write", "/workspace/bin", false, "is a directory"),
        row("write", "/workspace/bin/data.bin/x", false, "not a directory"),
        row("read", "/workspace/bin", false, "is a directory"),
        row("read", "/workspace/missing", false, "not found"),
        row("ls", "/workspace", true, "4 entries"),
        row("ls", "/workspace/bin", true, "1 entries"),
        row("ls", "/workspace/bin/data.bin", false, "not a directory"),
        row("ls", "/workspace/missing", false, "not found"),
        row("remove", "/workspace/a", true, ""),
        row("remove", "/workspace/empty.txt", true, ""),
        row("remove", "/workspace/a", false, "not found"),
        row("ls", "/workspace", true, "2 entries"),
        row("execute", "ls -A . bin \"${TMPDIR:-/tmp}\" | grep -c agenticos", false, "exit 1"),
    ]
}

db_test! {
    async fn with_native_files_off_or_over_their_limit_every_file_operation_answers_as_native(app: TestApp) {
        let o = Org::new(&app).await;
        let (native, native_rows) = scenario(&o, peer::shared().await).await;
        assert_eq!(native_rows, expected_rows());
        let answers: Vec<(&str, Value)> = native.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
        let at = |k: &str| answers.iter().find(|(what, _)| *what == k).map(|(_, v)| v.clone()).expect(k);
        assert_eq!(at("mode kept"), "751\n");
        assert_eq!(at("empty read"), json!([200, []]));
        assert_eq!(at("stat bin/data.bin"), json!({"name": "data.bin", "path": "bin/data.bin", "is_dir": false, "size": 6}));
        assert_eq!(at("stat bin"), json!({"name": "bin", "path": "bin", "is_dir": true, "size": null}));
        assert_eq!(at("stat empty.txt")["size"], 0);
        assert_eq!(at("ls root after"), json!([
            {"name": "bin", "path": "bin", "is_dir": true, "size": null},
            {"name": "large.bin", "path": "large.bin", "is_dir": false, "size": 5 * 1024 * 1024 + 3},
        ]));
        assert_eq!(at("nothing left"), "0\n");
        for env in [("SANDBOXD_NATIVE_FILES", "false"), ("SANDBOXD_MAX_READ_BYTES", "1000")] {
            let peer = Peer::start(PeerOptions::default().env(env.0, env.1)).await.expect("peer");
            let policy = peer.get("/policy").await;
            assert_eq!((policy["native_files"].clone(), policy["max_read_bytes"].clone()),
                if env.1 == "false" { (json!(false), json!(8_388_608)) } else { (json!(true), json!(1000)) });
            let (shell, shell_rows) = scenario(&o, &peer).await;
            assert_eq!(shell, native, "{env:?}: the shell answered otherwise than the native routes");
            assert_eq!(shell_rows, expected_rows(), "{env:?}: one row per operation, as native");
        }
    }
}

db_test! {
    async fn links_are_followed_or_taken_as_themselves_as_the_client_library_does(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        o.connect(peer).await;
        let agent = o.agent(service_agent("links", "run")).await;
        let run = o.run(&agent, None, json!({})).await;
        let setup = "mkdir -p d/real && printf abc > d/real/f.txt && printf xyz > d/plain.txt \
            && ln -s real d/link && ln -s real/f.txt d/flink && ln -s missing d/dangling && ln -s / d/top";
        assert_eq!(o.exec(&run, setup).await.json()["exit_code"], 0);

        // Reads follow a link, or a folder reached through one; a file beside links reads as ever.
        assert_eq!(o.read(&run, "d/flink").await.body, "abc");
        assert_eq!(o.read(&run, "d/link/f.txt").await.body, "abc");
        assert_eq!(o.read(&run, "d/plain.txt").await.body, "xyz");
        o.read(&run, "d/dangling").await.problem(404);
        // stat describes what a link leads to, marking it; a link leading nowhere is missing.
        assert_eq!(stat(&o, &run, "d/flink").await.json(),
            json!({"name": "flink", "path": "d/flink", "is_dir": false, "size": 3, "is_link": true}));
        assert_eq!(stat(&o, &run, "d/link").await.json(),
            json!({"name": "link", "path": "d/link", "is_dir": true, "size": null, "is_link": true}));
        assert_eq!(stat(&o, &run, "d/link/f.txt").await.json(),
            json!({"name": "f.txt", "path": "d/link/f.txt", "is_dir": false, "size": 3}));
        assert_eq!(stat(&o, &run, "d/plain.txt").await.json(),
            json!({"name": "plain.txt", "path": "d/plain.txt", "is_dir": false, "size": 3}));
        stat(&o, &run, "d/dangling").await.problem(404);
        // A write through a link writes what it leads to; the link stays a link.
        assert_eq!(o.write(&run, "d/flink", "new").await.status, 204);
        let out = o.exec(&run, "readlink d/flink; cat d/real/f.txt").await.json();
        assert_eq!(out["stdout"], "real/f.txt\nnew");
        assert_eq!(o.write(&run, "d/link/g.txt", "through").await.status, 204);
        assert_eq!(o.read(&run, "d/real/g.txt").await.body, "through");
        // remove takes a link itself, never what it leads to; through a folder link it removes there.
        for path in ["d/flink", "d/dangling", "d/link/g.txt"] {
            assert_eq!(o.ws(&run, Method::POST, "remove", Some(json!({"path": path}))).await.status, 204, "{path}");
        }
        let out = o.exec(&run, "ls -A d d/real").await.json();
        assert_eq!(out["stdout"], "d:\nlink\nplain.txt\nreal\ntop\n\nd/real:\nf.txt\n");
        // Nothing removes the workspace root, not even through a link to `/`.
        let p = o.ws(&run, Method::POST, "remove", Some(json!({"path": "d/top/workspace"}))).await.problem(403);
        assert!(p["detail"].as_str().is_some_and(|d| d.contains("workspace root")), "{p}");
        assert_eq!(o.read(&run, "d/plain.txt").await.body, "xyz", "the workspace is still there");
        o.finish(&run).await;
        assert_eq!(
            o.rows(&run).await,
            vec![
                row("execute", setup, true, "exit 0"),
                row("read", "/workspace/d/flink", true, "3 bytes"),
                row("read", "/workspace/d/link/f.txt", true, "3 bytes"),
                row("read", "/workspace/d/plain.txt", true, "3 bytes"),
                row("read", "/workspace/d/dangling", false, "not found"),
                row("write", "/workspace/d/flink", true, "3 bytes"),
                row("execute", "readlink d/flink; cat d/real/f.txt", true, "exit 0"),
                row("write", "/workspace/d/link/g.txt", true, "7 bytes"),
                row("read", "/workspace/d/real/g.txt", true, "7 bytes"),
                row("remove", "/workspace/d/flink", true, ""),
                row("remove", "/workspace/d/dangling", true, ""),
                row("remove", "/workspace/d/link/g.txt", true, ""),
                row("execute", "ls -A d d/real", true, "exit 0"),
                row("remove", "/workspace/d/top/workspace", false, "permission denied"),
                row("read", "/workspace/d/plain.txt", true, "3 bytes"),
            ]
        );
    }
}

db_test! {
    async fn a_file_over_the_native_limit_is_read_through_the_shell_up_to_ours(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        o.connect(peer).await;
        let agent = o.agent(service_agent("limits", "run")).await;
        let run = o.run(&agent, None, json!({})).await;
        // The host's native limit is 8 MiB, as ours: a file one byte over is handed back to the
        // shell, which measures it and refuses it unread (413), like the native path would.
        let setup = "head -c 8388609 /dev/zero > over.bin && head -c 8388608 /dev/zero > at.bin";
        assert_eq!(o.exec(&run, setup).await.json()["exit_code"], 0);
        let p = o.read(&run, "over.bin").await.problem(413);
        assert!(p["detail"].as_str().is_some_and(|d| d.contains("8 MiB")), "{p}");
        let (status, bytes) = get_bytes(&o, &run, "at.bin").await;
        assert_eq!((status, bytes.len()), (200, 8 * 1024 * 1024));
        o.finish(&run).await;
        assert_eq!(
            o.rows(&run).await,
            vec![
                row("execute", setup, true, "exit 0"),
                row("read", "/workspace/over.bin", false, "over the limit"),
                row("read", "/workspace/at.bin", true, "8388608 bytes"),
            ]
        );
    }
}
