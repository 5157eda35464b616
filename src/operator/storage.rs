//! The checker's rows in its Durable Object's storage
//! (`failover_core::edge::checker::stored` says which): read back once
//! when the object starts, written in batches as the machine asks. The
//! key-value API, which a SQLite-backed object (wrangler.toml's
//! `new_sqlite_classes`) serves from its database.

use failover_core::edge::checker::stored::{
    Restored, Writes, EVENT_PREFIX, META_KEY, OUTBOX_PREFIX, VERDICTS_KEY,
};
use worker::wasm_bindgen::JsValue;
use worker::{js_sys, Result, Storage};

/// The most keys one `put` or `delete` of several takes.
const BATCH: usize = 128;

/// Everything the checker stored, in one read: its rows are all the
/// object holds (500 events at most, a few deliveries), and `list` with a
/// prefix would cost the Wasm its options' serializer. A row that cannot
/// be read is left out (the machine starts without it) rather than failing
/// the object.
pub async fn load(storage: &Storage) -> Restored {
    let mut restored = Restored::default();
    let Ok(map) = storage.list().await else {
        return restored;
    };
    map.for_each(&mut |value, key| {
        let (Some(key), Some(value)) = (key.as_string(), value.as_string()) else {
            return;
        };
        if key == VERDICTS_KEY {
            restored.verdicts = Some(value);
        } else if key == META_KEY {
            restored.meta = Some(value);
        } else if key.starts_with(EVENT_PREFIX) {
            restored.events.push((key, value));
        } else if key.starts_with(OUTBOX_PREFIX) {
            restored.outbox.push((key, value));
        }
    });
    restored
}

/// Carries out the machine's writes.
pub async fn flush(storage: &Storage, writes: Writes) -> Result<()> {
    for chunk in writes.put.chunks(BATCH) {
        let object = js_sys::Object::new();
        for (key, value) in chunk {
            // Setting a property on a fresh plain object cannot fail.
            let _ =
                js_sys::Reflect::set(&object, &JsValue::from_str(key), &JsValue::from_str(value));
        }
        storage.put_multiple_raw(object).await?;
    }
    for chunk in writes.delete.chunks(BATCH) {
        storage.delete_multiple(chunk.to_vec()).await?;
    }
    Ok(())
}
