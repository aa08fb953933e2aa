//! JSON text written by hand: quoted strings, arrays of strings, and objects in insertion order.

use serde_json::Value;

/// `text` as a JSON string literal, quotes included.
pub(super) fn json_string(text: &str) -> String {
    Value::String(text.to_owned()).to_string()
}

/// The items as a JSON array of strings.
pub(super) fn json_array(items: &[String]) -> String {
    format!("[{}]", items.iter().map(|i| json_string(i)).collect::<Vec<_>>().join(","))
}

/// A JSON object written in insertion order (serde_json's map sorts its keys unless a feature
/// that another crate may switch on says otherwise; the order of the aliases carries the default).
#[derive(Default)]
pub(super) struct JsonObject {
    out: String,
}

impl JsonObject {
    pub(super) fn raw(&mut self, key: &str, raw_json: String) {
        self.out.push(if self.out.is_empty() { '{' } else { ',' });
        self.out.push_str(&json_string(key));
        self.out.push(':');
        self.out.push_str(&raw_json);
    }

    pub(super) fn string(&mut self, key: &str, value: &str) {
        self.raw(key, json_string(value));
    }

    pub(super) fn finish(mut self) -> String {
        if self.out.is_empty() {
            self.out.push('{');
        }
        self.out.push('}');
        self.out
    }
}
