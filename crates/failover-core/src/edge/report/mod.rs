//! The JSON the Worker writes: one log line per health change and per failed
//! attempt, and the status endpoint's document (and the same document for a
//! person: an HTML page in [`page`], plain text in [`text`], both drawing
//! [`table`], chosen by [`negotiate`]). Built here so the shell only prints
//! strings, and so the format is tested.

use serde_json::{json, Value};

use crate::edge::attempts::AfterFailure;
use crate::edge::checker::outbox::Settled;
use crate::edge::classify::Failure;
use crate::edge::config::{HostPattern, WorkerConfig};
use crate::edge::health::{HealthMap, Transition};
use crate::edge::overrides::{Override, Overrides};
use crate::edge::shared::SharedVerdict;
use crate::notify::{Event, Webhook};

// The page and the text are views of `status_document`, so they sit under
// this module, with the choice between them. Leaves first: the times, the
// overrides, the headline, the history, the table both views draw.
pub mod changes;
pub mod headline;
pub mod negotiate;
pub mod overrides;
pub mod page;
pub mod table;
pub mod text;
pub mod when;

/// What was built into the deployed Worker.
#[derive(Clone, Copy, Debug)]
pub struct BuildInfo<'a> {
    /// The crate's version.
    pub version: &'a str,
    /// The git revision it was built from (build.rs), `-dirty` when the
    /// tree had changes, `unknown` outside a checkout.
    pub revision: &'a str,
}

/// `{"event":"health",...}`: an origin's verdict flipped.
pub fn health_change(config: &WorkerConfig, t: &Transition) -> String {
    let origin = config
        .origins
        .get(t.origin)
        .map_or("?", |o| o.name.as_str());
    json!({
        "event": "health",
        "origin": origin,
        "from": t.from.as_str(),
        "to": t.to.as_str(),
        "reason": t.reason,
        "source": t.source.as_str(),
    })
    .to_string()
}

/// `{"event":"attempt_failed",...}`: one attempt failed; `next` is what
/// the Worker does about it, in words ("try replica").
pub fn attempt_failed(
    config: &WorkerConfig,
    origin: usize,
    method: &str,
    failure: Failure,
    next: &AfterFailure,
) -> String {
    let name_of = |i: usize| config.origins.get(i).map_or("?", |o| o.name.as_str());
    let next = match next {
        AfterFailure::TryOrigin(i) => format!("try {}", name_of(*i)),
        AfterFailure::PassThrough => "pass the response through".to_string(),
        AfterFailure::GiveUp { status, .. } => format!("answer {status}"),
        AfterFailure::AppAnswer(i) => format!("pass {}'s own answer through", name_of(*i)),
    };
    json!({
        "event": "attempt_failed",
        "origin": name_of(origin),
        "method": method,
        "failure": failure.label(),
        "next": next,
    })
    .to_string()
}

/// `{"event":"instance_ready",...}`: a Wasm instance has its config and is
/// serving; one line per instance (isolate start, or after a panic's reset).
pub fn instance_ready(config: &WorkerConfig) -> String {
    json!({
        "event": "instance_ready",
        "origins": config.origins.iter().map(|o| o.name.as_str()).collect::<Vec<_>>(),
        "steering": config.site().steering.as_str(),
    })
    .to_string()
}

/// `{"event":"fallback_failed",...}`: a request that should have had the
/// fallback page gets today's error instead; `reason` names no URL.
pub fn fallback_failed(reason: &str) -> String {
    json!({ "event": "fallback_failed", "reason": reason }).to_string()
}

/// `{"event":"config_error",...}`: logged once per isolate, with the
/// offending value, which the response to visitors never shows.
pub fn config_error(problem: &str, value: Option<&str>) -> String {
    json!({ "event": "config_error", "error": problem, "value": value }).to_string()
}

fn view(v: SharedVerdict) -> Value {
    json!({ "state": v.verdict.as_str(), "since_ms": v.since_ms, "confirmed_ms": v.confirmed_ms })
}

/// `{"event":"shared_health_error",...}`: the colo cache or the global
/// checker could not be used; the local map carries on.
pub fn shared_error(what: &str, error: &str) -> String {
    json!({ "event": "shared_health_error", "what": what, "error": error }).to_string()
}

/// The status endpoint's body.
pub fn status(
    config: &WorkerConfig,
    health: &HealthMap,
    build: BuildInfo<'_>,
    now_ms: u64,
) -> String {
    status_document(config, health, build, now_ms).to_string()
}

/// The status document, serialized (`status_document` and the `add_*`s
/// built it), as `representation` renders it: the page for a browser, the
/// text for scripts/status.mjs, the document itself for JSON. A document
/// that does not parse renders as a one-line explanation.
pub fn render(representation: negotiate::Representation, doc_json: &str) -> String {
    use negotiate::Representation;
    let Ok(doc) = serde_json::from_str::<Value>(doc_json) else {
        return "the status document could not be read".to_string();
    };
    match representation {
        Representation::Html => page::html(&doc),
        Representation::Text => text::render(&doc),
        Representation::Json => doc.to_string(),
    }
}

/// A body streamed because the isolate's replay budget was full; at most
/// one such line a minute.
pub fn replay_budget(over: &crate::edge::budget::OverBudget) -> String {
    json!({
        "event": "replay_budget",
        "message": "request bodies streamed to one origin: the replay buffer budget is full",
        "body_bytes": over.wanted,
        "held_bytes": over.held,
        "budget_bytes": over.limit,
        "streamed_since_last": over.streamed,
    })
    .to_string()
}

/// The replay budget's figures in the status document: bytes held now, the
/// peak since the isolate started, and the budget.
pub fn add_replay_buffer(doc: &mut Value, budget: &crate::edge::budget::ReplayBudget) {
    doc["replay_buffer"] = json!({
        "held_bytes": budget.held(),
        "peak_bytes": budget.peak(),
        "budget_bytes": budget.limit(),
    });
}

/// Whether the global checker is on (the shell knows: it is a binding, not
/// a setting), for the page's headline facts and for any reader of the JSON.
pub fn add_global_health(doc: &mut Value, on: bool) {
    doc["global_health"] = json!(on);
}

/// Every origin's override in the status document (`overrides`, by name:
/// the same object as `GET {STATUS_PATH}/origins` shows, as this isolate
/// knows it): `mode`, `set_at`, `expires_at`, `drain_s`, `in_effect`, and a
/// `warning` for `force-up`.
///
/// An origin slow start does not ramp because of its override
/// (`Standing::ramps`: forced up, drained, disabled) has its
/// `slow_start_pct` set to null: the share shown is the one routing applies.
pub fn add_overrides(doc: &mut Value, config: &WorkerConfig, overrides: &Overrides, now_ms: u64) {
    doc["overrides"] = crate::edge::overrides::api::by_name(config, overrides, now_ms);
    for (i, standing) in overrides.standings(now_ms).into_iter().enumerate() {
        if standing.ramps() {
            continue;
        }
        let entry = doc
            .get_mut("origins")
            .and_then(|origins| origins.get_mut(i))
            .and_then(Value::as_object_mut);
        if let Some(entry) = entry {
            entry.insert("slow_start_pct".to_string(), Value::Null);
        }
    }
}

/// `{"event":"override",...}`: the checker stored an operator's change, or
/// an override ran out and is `auto` again (`reason`).
pub fn override_change(origin: &str, o: &Override, reason: &str) -> String {
    json!({
        "event": "override",
        "origin": origin,
        "mode": o.mode.as_str(),
        "set_at_ms": o.set_at_ms,
        "expires_at_ms": o.expires_at_ms,
        "drain_s": o.drain.as_secs(),
        "reason": reason,
        "summary": o.describe(),
    })
    .to_string()
}

/// Whose history the status document's `events` are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventsView {
    /// The global checker's: the events that notify, for the whole site.
    Global,
    /// This isolate's own flips (no checker, or it could not be asked).
    Isolate,
}

impl EventsView {
    /// The `events_view` field.
    pub fn as_str(self) -> &'static str {
        match self {
            EventsView::Global => "global",
            EventsView::Isolate => "isolate",
        }
    }
}

/// How many events the status document lists.
pub const STATUS_EVENTS: usize = 50;

/// The history in the status document: `events`, newest first (each the
/// event's JSON, as a webhook receives it; at most [`STATUS_EVENTS`]), and
/// `events_view`, whose history it is.
pub fn add_events<'a>(
    doc: &mut Value,
    view: EventsView,
    events: impl IntoIterator<Item = &'a Event>,
) {
    doc["events"] = Value::Array(
        events
            .into_iter()
            .take(STATUS_EVENTS)
            .map(Event::to_json)
            .collect(),
    );
    doc["events_view"] = json!(view.as_str());
}

/// `{"event":"notify",...}`: what became of one try to deliver an event
/// to a receiver (`settled`: None when the outbox no longer held it),
/// named by its secret's var and its format (never the URL). A delivery
/// dropped for good says why, once: it is its last line.
pub fn delivery(
    webhook: &Webhook,
    event: &Event,
    status: Option<u16>,
    settled: Option<Settled>,
) -> String {
    let result = match settled {
        Some(Settled::Delivered) => "delivered",
        Some(Settled::Retry { .. }) => "retry",
        Some(Settled::Refused(_)) => "refused",
        Some(Settled::GaveUp) => "given up",
        None => "gone",
    };
    let mut line = json!({
        "event": "notify",
        "webhook": webhook.name,
        "format": webhook.format.as_str(),
        "id": event.id,
        "type": event.kind.as_str(),
        "origin": event.origin,
        "status": status,
        "result": result,
    });
    if let Some(Settled::Refused(why)) = settled {
        line["why"] = json!(why.advice());
    }
    line.to_string()
}

/// A ramp share as the status shows it: whole percent, None at 100 %.
fn ramp_pct(share: f64) -> Option<u64> {
    (share < 1.0).then(|| (share * 100.0).floor() as u64)
}

/// The status document, for [`status`] to print and [`page::html`] and
/// [`text::render`] to render.
pub fn status_document(
    config: &WorkerConfig,
    health: &HealthMap,
    build: BuildInfo<'_>,
    now_ms: u64,
) -> Value {
    let origins: Vec<Value> = config
        .origins
        .iter()
        .zip(health.origins())
        .enumerate()
        .map(|(i, (origin, h))| {
            let site = config.site_of(i).unwrap_or(config.site());
            json!({
                "name": origin.name,
                // Within its site: 0 is the site's primary.
                "priority": i - site.first,
                "site": site.name,
                "node": origin.node,
                "weight": origin.weight,
                "health_expect": origin.health_expect.describe(),
                // Whether a service token is configured; never its value.
                "access_token": origin.access.is_some(),
                "state": h.verdict().as_str(),
                "good_streak": h.good_streak(),
                "bad_streak": h.bad_streak(),
                "last_error": h.last_error().map(Failure::label),
                "last_change_ms": h.last_change_ms(),
                "local": json!({
                    "state": h.verdict().as_str(),
                    "since_ms": h.last_change_ms(),
                    "decided_by": h.last_source().as_str(),
                }),
                "colo": h.colo_view().map(view),
                "global": h.global_view().map(view),
                // The share of its requests it gets while slow start ramps
                // it up (whole percent, rounded down); null when not ramping.
                "slow_start_pct": ramp_pct(site.slow_start.share(h.up_since_ms(), now_ms)),
            })
        })
        .collect();
    json!({
        "version": build.version,
        "revision": build.revision,
        "now_ms": now_ms,
        "attempt_timeout_ms": config.attempt_timeout_ms,
        "health_interval_ms": config.health_interval_ms,
        "health_rise": config.health_rise,
        "steering": config.site().steering.as_str(),
        "hash_key": config.site().hash_key.describe(),
        "colo_health": config.colo_health,
        "affinity": json!({
            "mode": config.site().affinity.mode.as_str(),
            "ttl_s": config.site().affinity.ttl_s,
            "failover": config.site().affinity.failover.as_str(),
        }),
        // Which receivers, by the var holding their URL: never the URL.
        "notify": config.notify.iter().map(|w| json!({
            "format": w.format.as_str(),
            "url_var": w.name,
            "signed": w.secret.is_some(),
        })).collect::<Vec<_>>(),
        "notify_min_interval_s": config.notify_min_interval_s,
        // Which kind of fallback page is configured; never its URL or text.
        "fallback": config.site().fallback.as_ref().map(|f| f.kind()),
        "slow_start": json!({
            "window_s": config.site().slow_start.window.as_secs(),
            "min_pct": config.site().slow_start.min_pct,
        }),
        "origins": origins,
        // Each site: its hosts and its own routing policy (the top-level
        // keys above are the first site's, as they were before sites).
        "sites": config.sites.iter().map(|s| json!({
            "name": s.name,
            "hosts": s.hosts.iter().map(HostPattern::as_text).collect::<Vec<_>>(),
            "origins": s.origins.iter().map(|o| o.name.as_str()).collect::<Vec<_>>(),
            "steering": s.steering.as_str(),
            "hash_key": s.hash_key.describe(),
            "affinity": s.affinity.mode.as_str(),
            "fallback": s.fallback.as_ref().map(|f| f.kind()),
            "slow_start_s": s.slow_start.window.as_secs(),
        })).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::edge::shared::Source;
    use crate::streak::Verdict;

    /// A refused delivery's one line says why, by the receiver's var and
    /// format; no line ever shows the URL or the secret.
    #[test]
    fn a_delivery_line_names_the_receiver_and_says_why_it_was_dropped() {
        use crate::notify::retry::Refusal;
        use crate::notify::Format;
        let hook = Webhook {
            format: Format::Slack,
            url: "https://hooks.example/T0/Tok3nPath".into(),
            secret: Some("Tok3nKey".into()),
            name: "SLACK_URL".into(),
        };
        let event = crate::notify::event::tests::down("e-1", "primary", 0);
        let line = |settled| -> Value {
            let text = delivery(&hook, &event, Some(302), settled);
            assert!(!text.contains("Tok3n"), "{text}");
            serde_json::from_str(&text).unwrap()
        };
        let refused = line(Some(Settled::Refused(Refusal::Redirect)));
        assert_eq!(
            (&refused["webhook"], &refused["format"], &refused["result"]),
            (&json!("SLACK_URL"), &json!("slack"), &json!("refused"))
        );
        assert!(
            refused["why"].as_str().unwrap().contains("redirect"),
            "{refused}"
        );
        let retry = line(Some(Settled::Retry { at_ms: 5 }));
        assert_eq!(retry["result"], "retry");
        assert!(retry.get("why").is_none(), "{retry}");
        assert_eq!(line(None)["result"], "gone");
    }

    fn config() -> WorkerConfig {
        WorkerConfig::from_vars(|k| {
            (k == "ORIGINS").then(|| r#"[{"name":"primary","url":"https://a.example"},{"name":"replica","url":"https://b.example"}]"#.to_string())
        })
        .expect("valid")
    }

    /// What the operator module renders from the serialized document is
    /// what the renderers make of the document itself; the names cross
    /// the seam both ways.
    #[test]
    fn render_from_the_serialized_document() {
        use negotiate::Representation;
        let c = config();
        let mut h = HealthMap::new(2, 2, 1, std::time::Duration::from_secs(1));
        h.record_failure(0, Failure::Status(530), 42);
        let build = BuildInfo {
            version: "1.2.3",
            revision: "abc",
        };
        let mut doc = super::status_document(&c, &h, build, 50);
        add_global_health(&mut doc, false);
        let json = doc.to_string();
        assert_eq!(render(Representation::Html, &json), page::html(&doc));
        assert_eq!(render(Representation::Text, &json), text::render(&doc));
        assert_eq!(render(Representation::Json, &json), json);
        assert!(render(Representation::Html, &json).contains("primary"));
        for r in [
            Representation::Json,
            Representation::Html,
            Representation::Text,
        ] {
            assert_eq!(Representation::from_name(r.name()), Some(r));
        }
        assert_eq!(Representation::from_name("pdf"), None);
        assert_eq!(
            render(Representation::Html, "{not json"),
            "the status document could not be read"
        );
    }

    #[test]
    fn status_document() {
        let c = config();
        let mut h = HealthMap::new(2, 2, 1, std::time::Duration::from_secs(1));
        h.record_failure(0, Failure::Status(530), 42);
        let doc: Value = serde_json::from_str(&status(
            &c,
            &h,
            BuildInfo {
                version: "1.2.3",
                revision: "abc",
            },
            50,
        ))
        .expect("json");
        assert_eq!(doc["version"], "1.2.3");
        assert_eq!(doc["revision"], "abc");
        assert_eq!(doc["origins"][0]["name"], "primary");
        assert_eq!(doc["origins"][0]["state"], "down");
        assert_eq!(doc["origins"][0]["bad_streak"], 1);
        assert_eq!(doc["origins"][0]["last_error"], "status 530");
        assert_eq!(doc["origins"][0]["last_change_ms"], 42);
        assert_eq!(doc["origins"][1]["state"], "up");
        assert_eq!(doc["origins"][1]["last_error"], Value::Null);
        assert_eq!(doc["origins"][0]["colo"], Value::Null);
        assert_eq!(doc["colo_health"], true);
        assert_eq!(doc["global_health"], Value::Null, "the shell adds it");
        let mut with = doc.clone();
        add_global_health(&mut with, true);
        assert_eq!(with["global_health"], true);
        assert_eq!(doc["fallback"], Value::Null);
        assert_eq!(doc["origins"][1]["slow_start_pct"], Value::Null);
        assert_eq!(doc["slow_start"], json!({"window_s": 0, "min_pct": 10}));
        h.adopt(
            1,
            SharedVerdict {
                verdict: Verdict::Down,
                since_ms: 40,
                confirmed_ms: 45,
            },
            Source::Global,
            50,
            std::time::Duration::from_secs(1),
        );
        let doc: Value = serde_json::from_str(&status(
            &c,
            &h,
            BuildInfo {
                version: "1",
                revision: "r",
            },
            50,
        ))
        .expect("json");
        assert_eq!(
            doc["origins"][1]["global"],
            json!({"state":"down","since_ms":40,"confirmed_ms":45})
        );
        assert_eq!(doc["origins"][1]["state"], "down");
    }

    #[test]
    fn the_page_shows_what_the_document_does_and_no_more() {
        let c = config();
        let mut h = HealthMap::new(2, 2, 1, std::time::Duration::from_secs(1));
        h.record_failure(0, Failure::Refused, 42);
        let build = BuildInfo {
            version: "1.2.3",
            revision: "abc",
        };
        let page = page::html(&super::status_document(&c, &h, build, 50));
        for shown in ["primary", "replica", "refused", "1.2.3", "abc"] {
            assert!(page.contains(shown), "{shown}");
        }
        // The JSON never names an origin's URL; neither may the page.
        assert!(!page.contains("example"), "{page}");
        assert_eq!(
            status(&c, &h, build, 50),
            super::status_document(&c, &h, build, 50).to_string()
        );
    }

    #[test]
    fn overrides_join_the_document_and_the_log() {
        use crate::edge::overrides::Mode;
        let c = config();
        let h = HealthMap::new(2, 2, 1, std::time::Duration::from_secs(1));
        let build = BuildInfo {
            version: "1",
            revision: "r",
        };
        let mut doc = super::status_document(&c, &h, build, 50);
        let mut table = Overrides::none(2);
        let forced = Override {
            mode: Mode::ForceUp,
            set_at_ms: 10,
            expires_at_ms: Some(3_600_010),
            drain: std::time::Duration::ZERO,
        };
        table.set(1, forced);
        add_overrides(&mut doc, &c, &table, 50);
        assert_eq!(doc["overrides"]["primary"]["mode"], "auto");
        assert_eq!(doc["overrides"]["replica"]["mode"], "force-up");
        assert_eq!(doc["overrides"]["replica"]["expires_at_ms"], 3_600_010);
        assert!(doc["overrides"]["replica"]["warning"].is_string());
        let line: Value =
            serde_json::from_str(&override_change("replica", &forced, "set")).expect("json");
        assert_eq!(
            line,
            json!({"event":"override","origin":"replica","mode":"force-up","set_at_ms":10,
                   "expires_at_ms":3_600_010,"drain_s":0,"reason":"set",
                   "summary":"force-up (served regardless of health) until 1970-01-01T01:00:00Z"})
        );
    }

    /// With several sites each origin's row says its site and node; with
    /// one, only a node an origin names.
    #[test]
    fn the_page_says_whose_each_origin_is() {
        let sites = r#"[
          {"name":"www","hosts":["www.example"],"origins":[
            {"name":"www-home","url":"https://wh.example","node":"home"}]},
          {"name":"git","hosts":["git.example"],"origins":[
            {"name":"git-vps","url":"https://gv.example","node":"vps"},
            {"name":"git-cloud","url":"https://gc.example"}]}
        ]"#;
        let c = WorkerConfig::from_vars(|k| (k == "SITES").then(|| sites.to_string())).unwrap();
        let h = HealthMap::new(3, 2, 1, std::time::Duration::from_secs(1));
        let build = BuildInfo {
            version: "1",
            revision: "r",
        };
        let doc = super::status_document(&c, &h, build, 50);
        let page = page::html(&doc);
        for line in ["site www, node home", "site git, node vps", "site git<"] {
            assert!(page.contains(line), "{line}: {page}");
        }
        assert!(text::render(&doc).contains("site git, node vps"));
        let one = config();
        let h = HealthMap::new(2, 2, 1, std::time::Duration::from_secs(1));
        let page = page::html(&super::status_document(&one, &h, build, 50));
        assert!(!page.contains("site "), "one site: no site line");
    }

    /// With several sites the headline is the worst site's, naming the
    /// sites that need attention, and each site has its own line.
    #[test]
    fn several_sites_get_a_headline_each() {
        let sites = r#"[
          {"name":"www","hosts":["www.example"],"origins":[
            {"name":"www-home","url":"https://wh.example"},{"name":"www-vps","url":"https://wv.example"}]},
          {"name":"git","hosts":["git.example"],"origins":[
            {"name":"git-home","url":"https://gh.example"}]}
        ]"#;
        let c = WorkerConfig::from_vars(|k| (k == "SITES").then(|| sites.to_string())).unwrap();
        let build = BuildInfo {
            version: "1",
            revision: "r",
        };
        let mut h = HealthMap::new(3, 2, 1, std::time::Duration::from_secs(1));
        let all_up = super::status_document(&c, &h, build, 50);
        assert_eq!(headline::headline(&all_up).text, "All 2 sites healthy");
        h.record_failure(0, Failure::Refused, 40);
        h.record_failure(2, Failure::Refused, 45);
        let doc = super::status_document(&c, &h, build, 50);
        let top = headline::headline(&doc);
        assert_eq!(top.tone, headline::Tone::Down);
        assert_eq!(
            top.text,
            "2 of 2 sites need attention: www (failover), git (down)"
        );
        let lines = headline::site_headlines(&doc);
        assert_eq!(lines[0].0, "www");
        assert!(lines[0].1.text.contains("www-vps"), "{}", lines[0].1.text);
        assert!(!lines[0].1.text.contains("git"), "{}", lines[0].1.text);
        let text = text::render(&doc);
        assert!(text.contains("  git: [DOWN] No origin available"), "{text}");
        assert!(page::html(&doc).contains("<li class=\"tone-down\"><b>git</b>: "));
    }

    /// The page and the text read the document the Worker builds: with no
    /// override set (every origin `auto`), neither shows an overrides
    /// section; with one set, each mode shows as itself, never as a mode
    /// the page does not know.
    #[test]
    fn the_page_and_the_text_show_only_the_overrides_that_are_set() {
        use crate::edge::overrides::Mode;
        let c = config();
        let h = HealthMap::new(2, 2, 1, std::time::Duration::from_secs(1));
        let build = BuildInfo {
            version: "1",
            revision: "r",
        };
        let mut none = super::status_document(&c, &h, build, 50);
        add_overrides(&mut none, &c, &Overrides::none(2), 50);
        assert_eq!(none["overrides"]["primary"]["mode"], "auto");
        let page = page::html(&none);
        assert!(!page.contains("Overrides"), "{page}");
        assert!(!page.contains("does not know"), "{page}");
        let text = text::render(&none);
        assert!(!text.contains("overrides"), "{text}");
        for (mode, shown) in [
            (Mode::Drain, "drained: no new traffic"),
            (Mode::Disable, "disabled: no traffic"),
            (Mode::ForceUp, "FORCED UP"),
        ] {
            let mut table = Overrides::none(2);
            table.set(
                1,
                Override {
                    mode,
                    set_at_ms: 10,
                    expires_at_ms: None,
                    drain: std::time::Duration::from_secs(300),
                },
            );
            let mut doc = super::status_document(&c, &h, build, 50);
            add_overrides(&mut doc, &c, &table, 50);
            let page = page::html(&doc);
            assert!(page.contains("<h2>Overrides</h2>"), "{mode:?}");
            assert!(
                page.contains(&format!("replica: {shown}")),
                "{mode:?}: {page}"
            );
            assert!(!page.contains("primary: "), "{mode:?}: {page}");
            assert!(!page.contains("does not know"), "{mode:?}: {page}");
            assert!(text::render(&doc).contains(shown), "{mode:?}");
        }
    }

    /// `slow_start_pct` is the share routing applies: an origin ramping up
    /// shows it, unless an override stops the ramp (`Standing::ramps`).
    #[test]
    fn a_ramping_origin_shows_its_share_unless_an_override_stops_the_ramp() {
        use crate::edge::overrides::Mode;
        let c = WorkerConfig::from_vars(|k| match k {
            "ORIGINS" => Some(r#"[{"name":"primary","url":"https://a.example"},{"name":"replica","url":"https://b.example"}]"#.to_string()),
            "SLOW_START_S" => Some("60".to_string()),
            _ => None,
        })
        .expect("valid");
        let mut h = HealthMap::new(2, 2, 1, std::time::Duration::from_secs(15));
        h.record_failure(0, Failure::Timeout, 1_000);
        h.record_probe(0, None, 16_000);
        h.record_probe(0, None, 31_000);
        let build = BuildInfo {
            version: "1",
            revision: "r",
        };
        let doc = super::status_document(&c, &h, build, 46_000);
        assert_eq!(doc["origins"][0]["slow_start_pct"], 25);
        assert_eq!(doc["origins"][1]["slow_start_pct"], Value::Null);
        assert_eq!(doc["slow_start"], json!({"window_s": 60, "min_pct": 10}));
        for (mode, pct) in [
            (Mode::Auto, json!(25)),
            (Mode::ForceUp, Value::Null),
            (Mode::Drain, Value::Null),
            (Mode::Disable, Value::Null),
        ] {
            let mut table = Overrides::none(2);
            table.set(
                0,
                Override {
                    mode,
                    set_at_ms: 40_000,
                    expires_at_ms: None,
                    drain: std::time::Duration::from_secs(300),
                },
            );
            let mut with = doc.clone();
            add_overrides(&mut with, &c, &table, 46_000);
            assert_eq!(with["origins"][0]["slow_start_pct"], pct, "{mode:?}");
        }
        // A document without origins, or with odd ones, is left as it is.
        let mut forced = Overrides::none(2);
        forced.set(
            1,
            Override {
                mode: Mode::ForceUp,
                set_at_ms: 40_000,
                expires_at_ms: None,
                drain: std::time::Duration::ZERO,
            },
        );
        for odd in [json!({}), json!({"origins": [1]}), json!({"origins": 7})] {
            let mut with = odd.clone();
            add_overrides(&mut with, &c, &forced, 46_000);
            assert_eq!(with["origins"], odd["origins"]);
        }
    }

    #[test]
    fn events_newest_first_with_whose_view_and_no_receiver_url() {
        let c = WorkerConfig::from_vars(|k| {
            Some(match k {
                "ORIGINS" => r#"[{"name":"primary","url":"https://a.example"}]"#.into(),
                "NOTIFY" => r#"[{"format":"json","url_var":"HOOK","secret_var":"KEY"}]"#.into(),
                "HOOK" => "https://hooks.example.com/hunter2".into(),
                "KEY" => "s3cr3t".into(),
                "HEALTH_CHECKER" => "bound".into(),
                _ => return None,
            })
        })
        .expect("valid");
        let h = HealthMap::new(1, 2, 1, std::time::Duration::from_secs(1));
        let build = BuildInfo {
            version: "1",
            revision: "r",
        };
        let mut doc = super::status_document(&c, &h, build, 50);
        let events: Vec<Event> = (0..60)
            .map(|n| {
                let mut e = crate::notify::event::tests::down(&format!("e-{n}"), "primary", n);
                e.site = "www.example.com".into();
                e
            })
            .rev()
            .collect();
        add_events(&mut doc, EventsView::Global, &events);
        assert_eq!(doc["events_view"], "global");
        let listed = doc["events"].as_array().expect("array");
        assert_eq!(listed.len(), STATUS_EVENTS);
        assert_eq!(listed[0]["id"], "e-59");
        assert_eq!(listed[0]["type"], "origin.down");
        assert_eq!(
            doc["notify"],
            json!([{"format":"json","url_var":"HOOK","signed":true}])
        );
        let text = doc.to_string();
        assert!(
            !text.contains("hunter2") && !text.contains("s3cr3t"),
            "{text}"
        );
        add_events(&mut doc, EventsView::Isolate, &[]);
        assert_eq!(doc["events_view"], "isolate");
        assert_eq!(doc["events"], json!([]));
    }

    #[test]
    fn log_lines_are_json() {
        let c = config();
        let mut h = HealthMap::new(2, 2, 1, std::time::Duration::from_secs(1));
        let t = h.record_failure(1, Failure::Timeout, 1).expect("flip");
        let line: Value = serde_json::from_str(&health_change(&c, &t)).expect("json");
        assert_eq!(
            line,
            json!({"event":"health","origin":"replica","from":"up","to":"down","reason":"timeout","source":"local"})
        );
        let line: Value = serde_json::from_str(&attempt_failed(
            &c,
            0,
            "GET",
            Failure::Refused,
            &AfterFailure::TryOrigin(1),
        ))
        .expect("json");
        assert_eq!(line["failure"], "refused");
        assert_eq!(line["next"], "try replica");
        let next = |after: AfterFailure| -> Value {
            let line = attempt_failed(&c, 0, "POST", Failure::Status(502), &after);
            serde_json::from_str::<Value>(&line).expect("json")["next"].clone()
        };
        assert_eq!(next(AfterFailure::PassThrough), "pass the response through");
        assert_eq!(
            next(AfterFailure::AppAnswer(0)),
            "pass primary's own answer through"
        );
        assert_eq!(next(AfterFailure::TryOrigin(7)), "try ?");
        let line: Value =
            serde_json::from_str(&config_error("bad \"x\"", Some("\"x\""))).expect("json");
        assert_eq!(line["error"], "bad \"x\"");
        let line: Value = serde_json::from_str(&fallback_failed("status 500")).expect("json");
        assert_eq!(
            line,
            json!({"event":"fallback_failed","reason":"status 500"})
        );
    }
}
