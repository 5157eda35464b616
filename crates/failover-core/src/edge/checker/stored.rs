//! What the checker keeps in its Durable Object's storage, under which
//! keys, and the writes it asks its shell for. Key-value storage (on the
//! object's SQLite backend in production), one small value per key: an
//! event or a delivery is one row, so appending one never rewrites the
//! history.
//!
//! - `verdicts`: the health map in the shared wire format.
//! - `meta`: the event counter (`epoch_ms`, `next_seq`), the `site`, the
//!   flap guard's memory.
//! - `event:<seq, 16 digits>`: one event's JSON; the newest 500 are kept.
//! - `outbox:<queue number, 16 digits>:<receiver>`: one delivery's JSON.

use serde_json::{json, Value};

use crate::notify::flap::FlapGuard;

/// The health map's verdicts.
pub const VERDICTS_KEY: &str = "verdicts";
/// The counter, the site and the flap guard.
pub const META_KEY: &str = "meta";
/// Before each event's sequence number.
pub const EVENT_PREFIX: &str = "event:";
/// Before each delivery's key.
pub const OUTBOX_PREFIX: &str = "outbox:";

/// The key of event number `seq`: zero-padded, so keys sort in order.
pub fn event_key(seq: u64) -> String {
    format!("{EVENT_PREFIX}{seq:016}")
}

/// The sequence number an event key carries.
pub fn event_seq(key: &str) -> Option<u64> {
    key.strip_prefix(EVENT_PREFIX)?.parse().ok()
}

/// Storage writes, to be carried out in one batch. A key written twice
/// keeps the last write, so a delivery queued and settled before the shell
/// flushed costs nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Writes {
    /// Keys to set, with their (JSON text) values.
    pub put: Vec<(String, String)>,
    /// Keys to delete.
    pub delete: Vec<String>,
}

impl Writes {
    /// Sets `key`.
    pub fn put(&mut self, key: String, value: String) {
        self.delete.retain(|k| *k != key);
        self.put.retain(|(k, _)| *k != key);
        self.put.push((key, value));
    }

    /// Deletes `key`.
    pub fn delete(&mut self, key: String) {
        self.put.retain(|(k, _)| *k != key);
        if !self.delete.contains(&key) {
            self.delete.push(key);
        }
    }

    /// Nothing to write.
    pub fn is_empty(&self) -> bool {
        self.put.is_empty() && self.delete.is_empty()
    }
}

/// What the shell read back when the object started.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Restored {
    /// `verdicts`.
    pub verdicts: Option<String>,
    /// `meta`.
    pub meta: Option<String>,
    /// Every `event:` key with its value.
    pub events: Vec<(String, String)>,
    /// Every `outbox:` key with its value.
    pub outbox: Vec<(String, String)>,
}

/// The `meta` row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Meta {
    /// When the event counter started.
    pub epoch_ms: u64,
    /// The next event's sequence number.
    pub next_seq: u64,
    /// The public hostname events name.
    pub site: String,
    /// The flap guard's memory (`FlapGuard::to_json`).
    pub guard: Value,
}

impl Meta {
    /// The stored form.
    pub fn to_text(&self) -> String {
        json!({
            "epoch_ms": self.epoch_ms,
            "next_seq": self.next_seq,
            "site": self.site,
            "guard": self.guard,
        })
        .to_string()
    }

    /// Reads back [`Meta::to_text`]; None for anything else.
    pub fn parse(text: &str) -> Option<Meta> {
        let v: Value = serde_json::from_str(text).ok()?;
        Some(Meta {
            epoch_ms: v.get("epoch_ms")?.as_u64()?,
            next_seq: v.get("next_seq")?.as_u64()?,
            site: v
                .get("site")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned(),
            guard: v.get("guard").cloned().unwrap_or(Value::Null),
        })
    }

    /// The flap guard it holds, for `min_interval_ms`.
    pub fn guard(&self, min_interval_ms: u64) -> FlapGuard {
        FlapGuard::from_json(min_interval_ms, &self.guard)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_keys_sort_in_order_and_read_back() {
        assert!(event_key(9) < event_key(10));
        assert_eq!(event_seq(&event_key(42)), Some(42));
        assert_eq!(event_seq("event:x"), None);
        assert_eq!(event_seq("outbox:1"), None);
    }

    #[test]
    fn the_last_write_to_a_key_wins() {
        let mut w = Writes::default();
        w.put("a".into(), "1".into());
        w.delete("a".into());
        assert_eq!(w.put, vec![]);
        assert_eq!(w.delete, vec!["a".to_string()]);
        w.put("a".into(), "2".into());
        w.put("a".into(), "3".into());
        assert_eq!(w.put, vec![("a".to_string(), "3".to_string())]);
        assert!(w.delete.is_empty());
        assert!(!w.is_empty());
    }

    #[test]
    fn meta_round_trips_and_junk_is_none() {
        let meta = Meta {
            epoch_ms: 1,
            next_seq: 7,
            site: "www.example.com".into(),
            guard: json!([]),
        };
        assert_eq!(Meta::parse(&meta.to_text()), Some(meta));
        for junk in ["", "[]", "{\"epoch_ms\":\"x\"}", "{\"epoch_ms\":1}"] {
            assert_eq!(Meta::parse(junk), None, "{junk}");
        }
    }
}
