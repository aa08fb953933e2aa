//! What of a passed answer never leaves the proxy: a container's environment and command line,
//! where secrets live (`SANDBOXD_TOKEN`, a database password, a `--token` argument). The console
//! reads neither; the proxy removes them so that a console that would try cannot either.

use bytes::Bytes;
use serde_json::Value;

use super::allowlist::ReadCall;

/// `body`, a successful answer to `call`, without environment and command lines. An answer that
/// is not the JSON expected is passed as it is only when it carries none of them: otherwise the
/// answer is replaced by an empty one of its kind.
pub fn redacted(call: ReadCall, body: Bytes) -> Bytes {
    match call {
        ReadCall::ContainerList => rewrite(&body, Value::Array(Vec::new()), |v| {
            for summary in v.as_array_mut().into_iter().flatten() {
                remove(summary, &["Command"]);
            }
        }),
        ReadCall::ContainerInspect => rewrite(&body, Value::Object(Default::default()), |v| {
            remove(v, &["Args"]);
            if let Some(config) = v.get_mut("Config") {
                remove(config, &["Env", "Cmd", "Entrypoint"]);
            }
        }),
        ReadCall::Ping | ReadCall::Version | ReadCall::ContainerStats => body,
    }
}

fn rewrite(body: &Bytes, empty: Value, strip: impl FnOnce(&mut Value)) -> Bytes {
    let mut value = serde_json::from_slice::<Value>(body).unwrap_or(empty);
    strip(&mut value);
    Bytes::from(serde_json::to_vec(&value).unwrap_or_default())
}

fn remove(value: &mut Value, keys: &[&str]) {
    if let Some(object) = value.as_object_mut() {
        for key in keys {
            object.remove(*key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn of(call: ReadCall, v: Value) -> Value {
        serde_json::from_slice(&redacted(call, Bytes::from(v.to_string()))).expect("json")
    }

    #[test]
    fn an_inspection_loses_its_environment_and_command_line_and_keeps_the_rest() {
        let inspected = json!({
            "Id": "abc", "Path": "/bin/sandboxd", "Args": ["--token", "s3cret"], "RestartCount": 2,
            "State": {"Health": {"Status": "healthy"}},
            "Config": {"Env": ["SANDBOXD_TOKEN=s3cret"], "Cmd": ["--token", "s3cret"], "Entrypoint": ["x"], "Image": "i"},
        });
        let out = of(ReadCall::ContainerInspect, inspected);
        assert!(!out.to_string().contains("s3cret"), "{out}");
        assert_eq!(out["RestartCount"], 2);
        assert_eq!(out["State"]["Health"]["Status"], "healthy");
        assert_eq!(out["Config"], json!({"Image": "i"}));
    }

    #[test]
    fn a_list_loses_each_command_line() {
        let listed = json!([{"Id": "a", "Image": "i:1", "Command": "run --token s3cret"}, {"Id": "b"}]);
        assert_eq!(of(ReadCall::ContainerList, listed), json!([{"Id": "a", "Image": "i:1"}, {"Id": "b"}]));
    }

    #[test]
    fn an_unexpected_answer_is_emptied_and_stats_pass_unchanged() {
        let garbled = redacted(ReadCall::ContainerInspect, Bytes::from_static(b"SANDBOXD_TOKEN=s3cret"));
        assert_eq!(&garbled[..], b"{}");
        let stats = Bytes::from_static(b"{\"memory_stats\":{}}");
        assert_eq!(redacted(ReadCall::ContainerStats, stats.clone()), stats);
    }
}
