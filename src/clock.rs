//! Wall-clock milliseconds. `std::time` panics on wasm32, so this asks JS.
//! In Workers the clock only advances across I/O, which is all the health
//! map needs.

pub fn now_ms() -> u64 {
    let now = js_sys::Date::now();
    if now.is_finite() && now > 0.0 {
        now as u64
    } else {
        0
    }
}
