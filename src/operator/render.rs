//! The status page as HTML (a browser) or plain text (scripts/status.mjs),
//! rendered here, in the operator module, from the JSON document the
//! request path built (src/status.rs hands it over through
//! src/js/operator.mjs): the renderers and their markup are most of the
//! status page's code, and no request but an operator's needs them.

use failover_core::edge::report::{self, negotiate::Representation};
use worker::wasm_bindgen::prelude::wasm_bindgen;

/// `representation` names one (`"html"`, `"text"`; anything else is the
/// text); `doc` is the status document as JSON.
#[wasm_bindgen]
pub fn render_status(representation: &str, doc: &str) -> String {
    let representation = Representation::from_name(representation).unwrap_or(Representation::Text);
    #[cfg(feature = "panic-test")]
    panic_on_text(representation);
    report::render(representation, doc)
}

/// Test builds only (tests/panic.test.mjs): the text renderer panics, to
/// prove a panic in this module neither resets the request path's
/// instance nor stops the next render.
#[cfg(feature = "panic-test")]
#[allow(clippy::panic)]
fn panic_on_text(representation: Representation) {
    if representation == Representation::Text {
        panic!("panic-test: the operator module's text renderer");
    }
}
