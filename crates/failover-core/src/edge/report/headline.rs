//! The status page's first line, the answer to "is my site up, and from
//! where": "Serving from replica (failover) since 19:21 UTC — primary down:
//! connection refused", "No origin available since ...", "All origins
//! healthy". Decided from the status document alone, with a [`Tone`] the
//! page colours and a test can name.
//!
//! Which origins serve follows the steering policy (edge/steering.rs):
//! - `failover`: the first healthy origin in priority order takes every
//!   request; the one preferred is the first.
//! - `weighted` and `hash`: every healthy origin of weight above 0 takes a
//!   share; origins of weight 0 are spares, used only when none of those is
//!   up.
//!
//! An origin drained or disabled by an override serves no new traffic, one
//! forced up serves whatever its health (and the headline says so). One
//! that slow start ramps up (`slow_start_pct`) serves part of its requests
//! so far, and the headline says how much.

use serde_json::Value;

use super::overrides::{self, Mode, Override};
use super::when::{self, Precision};

/// How things stand, for the page's colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tone {
    /// Every origin healthy, nothing overridden.
    Healthy,
    /// The preferred origins serve, but a backup is down, or an override is
    /// in force.
    Degraded,
    /// Traffic moved off a preferred origin.
    Failover,
    /// No origin serves.
    Down,
    /// The document says too little to tell.
    Unknown,
}

impl Tone {
    /// The page's CSS class, and the text's word for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Tone::Healthy => "healthy",
            Tone::Degraded => "degraded",
            Tone::Failover => "failover",
            Tone::Down => "down",
            Tone::Unknown => "unknown",
        }
    }
}

/// The headline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Headline {
    /// Its colour.
    pub tone: Tone,
    /// The sentence.
    pub text: String,
    /// Since when things stand so, ms since the epoch, when known.
    pub since_ms: Option<u64>,
}

/// One origin as the headline needs it.
struct Origin<'a> {
    name: &'a str,
    up: bool,
    weight: u64,
    last_change_ms: Option<u64>,
    error: Option<&'a str>,
    decided_by: Option<&'a str>,
    forced: Option<&'a Override>,
    /// Slow start: the share of its requests it gets so far, in percent.
    ramp_pct: Option<u64>,
}

impl Origin<'_> {
    fn serves(&self) -> bool {
        match self.forced.map(|o| &o.mode) {
            Some(Mode::ForceUp) => true,
            Some(mode) if mode.holds_back() => false,
            _ => self.up,
        }
    }

    /// Since when it is in the state the headline reports: since the
    /// override, when the override is what put it there.
    fn since_ms(&self) -> Option<u64> {
        match self.forced {
            Some(o) if o.mode.holds_back() || (o.mode == Mode::ForceUp && !self.up) => {
                o.set_at_ms().or(self.last_change_ms)
            }
            _ => self.last_change_ms,
        }
    }

    /// Why it does not serve: `primary down: connection refused`.
    fn why_not(&self) -> String {
        match self.forced.map(|o| &o.mode) {
            Some(Mode::Drain) => return format!("{} drained by an override", self.name),
            Some(Mode::Disable) => return format!("{} disabled by an override", self.name),
            _ => {}
        }
        let why = match (self.error, self.decided_by) {
            (Some(e), _) => failure_in_words(e).to_string(),
            (None, Some("colo")) => "the colo's verdict".to_string(),
            (None, Some("global")) => "the global checker's verdict".to_string(),
            _ => return format!("{} down", self.name),
        };
        format!("{} down: {why}", self.name)
    }
}

/// A failure label (edge/classify.rs `Failure::label`) as a person says it;
/// any other text as it is.
pub fn failure_in_words(label: &str) -> &str {
    match label {
        "refused" => "connection refused",
        "network" => "network error",
        "timeout" => "timed out",
        "access login" => "Cloudflare Access asked for a login",
        other => other,
    }
}

/// `a`, `a and b`, `a, b and c`.
fn names(list: &[&Origin<'_>]) -> String {
    let names: Vec<&str> = list.iter().map(|o| o.name).collect();
    match names.split_last() {
        None => String::new(),
        Some((last, [])) => (*last).to_string(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

fn latest<'a>(list: impl IntoIterator<Item = &'a Origin<'a>>) -> Option<u64> {
    list.into_iter().filter_map(Origin::since_ms).max()
}

fn since(ms: Option<u64>, now_ms: Option<u64>) -> String {
    ms.map(|ms| format!(" since {}", when::moment(ms, now_ms, Precision::Minutes)))
        .unwrap_or_default()
}

/// The headline for a status document (`report::status_document`, with
/// `overrides` when it has them).
pub fn headline(doc: &Value) -> Headline {
    let sites = site_headlines(doc);
    if sites.is_empty() {
        return one_site(doc);
    }
    // Several sites: the worst of them, and which need attention.
    let rank = |t: Tone| match t {
        Tone::Healthy => 0,
        Tone::Degraded => 1,
        Tone::Unknown => 2,
        Tone::Failover => 3,
        Tone::Down => 4,
    };
    let worst = sites.iter().map(|(_, h)| h.tone).max_by_key(|t| rank(*t));
    let attention: Vec<&(String, Headline)> = sites
        .iter()
        .filter(|(_, h)| h.tone != Tone::Healthy)
        .collect();
    let text = if attention.is_empty() {
        format!("All {} sites healthy", sites.len())
    } else {
        let which: Vec<String> = attention
            .iter()
            .map(|(name, h)| format!("{name} ({})", h.tone.as_str()))
            .collect();
        format!(
            "{} of {} sites need attention: {}",
            attention.len(),
            sites.len(),
            which.join(", ")
        )
    };
    Headline {
        tone: worst.unwrap_or(Tone::Unknown),
        text,
        since_ms: attention.iter().filter_map(|(_, h)| h.since_ms).max(),
    }
}

/// With several sites (the document's `sites`), each site's own headline,
/// from its origins and its steering alone, in the document's order;
/// empty with one site.
pub fn site_headlines(doc: &Value) -> Vec<(String, Headline)> {
    let Some(sites) = doc["sites"].as_array().filter(|s| s.len() > 1) else {
        return Vec::new();
    };
    sites
        .iter()
        .map(|site| {
            let name = site["name"].as_str().unwrap_or("?");
            let mut view = doc.clone();
            let mine: Vec<Value> = doc["origins"]
                .as_array()
                .map_or(&[][..], Vec::as_slice)
                .iter()
                .filter(|o| o["site"].as_str() == Some(name))
                .cloned()
                .collect();
            view["origins"] = Value::Array(mine);
            view["steering"] = site["steering"].clone();
            (name.to_string(), one_site(&view))
        })
        .collect()
}

/// The headline of one site's origins.
fn one_site(doc: &Value) -> Headline {
    let now = doc["now_ms"].as_u64();
    let overrides = overrides::read(doc);
    let origins: Vec<Origin<'_>> = doc["origins"]
        .as_array()
        .map_or(&[][..], Vec::as_slice)
        .iter()
        .filter_map(|o| {
            let name = o["name"].as_str()?;
            Some(Origin {
                name,
                up: o["state"].as_str() == Some("up"),
                weight: o["weight"].as_u64().unwrap_or(1),
                last_change_ms: o["last_change_ms"].as_u64(),
                error: o["last_error"].as_str(),
                decided_by: o["local"]["decided_by"].as_str(),
                forced: overrides.iter().find(|v| v.origin == name),
                ramp_pct: o["slow_start_pct"].as_u64(),
            })
        })
        .collect();
    if origins.is_empty() {
        return Headline {
            tone: Tone::Unknown,
            text: "Origin health unknown".to_string(),
            since_ms: None,
        };
    }
    let mut headline = serving(&origins, doc["steering"].as_str(), now);
    let forced: Vec<&Origin<'_>> = origins
        .iter()
        .filter(|o| o.forced.is_some_and(|v| v.mode == Mode::ForceUp))
        .collect();
    if !forced.is_empty() {
        headline.text.push_str(&format!(
            "; {} FORCED UP by an override, whatever {} health",
            names(&forced),
            if forced.len() == 1 { "its" } else { "their" }
        ));
        if headline.tone == Tone::Healthy {
            headline.tone = Tone::Degraded;
            headline.text = headline.text.replacen("healthy", "serving", 1);
        }
    }
    let ramping: Vec<String> = origins
        .iter()
        .filter_map(|o| Some(format!("{} at {} %", o.name, o.ramp_pct?)))
        .collect();
    if !ramping.is_empty() {
        headline.text.push_str(&format!(
            "; slow start: {} of {} requests",
            ramping.join(", "),
            if ramping.len() == 1 { "its" } else { "their" }
        ));
    }
    headline
}

fn serving(origins: &[Origin<'_>], steering: Option<&str>, now: Option<u64>) -> Headline {
    let serving: Vec<usize> = (0..origins.len())
        .filter(|&i| origins[i].serves())
        .collect();
    let not_serving: Vec<&Origin<'_>> = origins.iter().filter(|o| !o.serves()).collect();
    let reasons = |list: &[&Origin<'_>]| {
        list.iter()
            .map(|o| o.why_not())
            .collect::<Vec<_>>()
            .join("; ")
    };
    if serving.is_empty() {
        let at = latest(origins.iter());
        return Headline {
            tone: Tone::Down,
            text: format!(
                "No origin available{} — {}",
                since(at, now),
                reasons(&not_serving)
            ),
            since_ms: at,
        };
    }
    // Which origins take traffic when all is well, and which take it now.
    let weighted = matches!(steering, Some("weighted" | "hash"));
    let (preferred, shown): (Vec<usize>, Vec<usize>) = if weighted {
        let mut preferred: Vec<usize> = (0..origins.len())
            .filter(|&i| origins[i].weight > 0)
            .collect();
        if preferred.is_empty() {
            preferred = (0..origins.len()).collect();
        }
        let main: Vec<usize> = serving
            .iter()
            .copied()
            .filter(|i| preferred.contains(i))
            .collect();
        let shown = if main.is_empty() {
            serving.clone()
        } else {
            main
        };
        (preferred, shown)
    } else {
        (vec![0], serving[..1].to_vec())
    };
    let shown_origins: Vec<&Origin<'_>> = shown.iter().map(|&i| &origins[i]).collect();
    if preferred.iter().all(|i| serving.contains(i)) {
        if not_serving.is_empty() {
            return Headline {
                tone: Tone::Healthy,
                text: "All origins healthy".to_string(),
                since_ms: None,
            };
        }
        let at = latest(not_serving.iter().copied());
        return Headline {
            tone: Tone::Degraded,
            text: format!(
                "Serving from {} — {}{}",
                names(&shown_origins),
                reasons(&not_serving),
                since(at, now).replacen(" since", ", since", 1)
            ),
            since_ms: at,
        };
    }
    // Traffic moved: since the last of the origins it moved off went down,
    // or the one it moved to came back, whichever was later.
    let moved_off: Vec<&Origin<'_>> = if weighted {
        preferred
            .iter()
            .map(|&i| &origins[i])
            .filter(|o| !o.serves())
            .collect()
    } else {
        origins[..shown[0]].iter().collect()
    };
    let at = latest(
        moved_off
            .iter()
            .copied()
            .chain(shown_origins.iter().copied()),
    );
    Headline {
        tone: Tone::Failover,
        text: format!(
            "Serving from {} (failover){} — {}",
            names(&shown_origins),
            since(at, now),
            reasons(&moved_off)
        ),
        since_ms: at,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const NOW: u64 = 1_785_585_605_123; // 2026-08-01 12:00:05 UTC
    const AT_1121: u64 = 1_785_583_260_000; // 11:21:00
    const AT_1130: u64 = 1_785_583_800_000; // 11:30:00

    /// (name, state, weight, last_change_ms, last_error, decided_by)
    type Row<'a> = (&'a str, &'a str, u64, Option<u64>, Option<&'a str>, &'a str);
    /// (what, origins, tone, text, since)
    type Case<'a> = (&'a str, Vec<Row<'a>>, Tone, &'a str, Option<u64>);

    fn doc(steering: &str, rows: &[Row<'_>]) -> Value {
        let origins: Vec<Value> = rows
            .iter()
            .map(|(name, state, weight, since, error, by)| {
                json!({"name": name, "state": state, "weight": weight,
                    "last_change_ms": since, "last_error": error,
                    "local": {"state": state, "since_ms": since, "decided_by": by}})
            })
            .collect();
        json!({"now_ms": NOW, "steering": steering, "origins": origins})
    }

    #[test]
    fn failover_steering() {
        let up = |name| (name, "up", 1, None, None, "local");
        let cases: &[Case<'_>] = &[
            (
                "all up",
                vec![up("primary"), up("replica")],
                Tone::Healthy,
                "All origins healthy",
                None,
            ),
            (
                "the primary down: the replica serves",
                vec![
                    ("primary", "down", 1, Some(AT_1121), Some("refused"), "local"),
                    up("replica"),
                ],
                Tone::Failover,
                "Serving from replica (failover) since 11:21 UTC — primary down: connection refused",
                Some(AT_1121),
            ),
            (
                "the replica came back after both were down: since it came back",
                vec![
                    ("primary", "down", 1, Some(AT_1121), Some("status 530"), "local"),
                    ("replica", "up", 1, Some(AT_1130), Some("timeout"), "local"),
                ],
                Tone::Failover,
                "Serving from replica (failover) since 11:30 UTC — primary down: status 530",
                Some(AT_1130),
            ),
            (
                "two down ahead of the third, on another's word",
                vec![
                    ("primary", "down", 1, Some(AT_1121), None, "global"),
                    ("replica", "down", 1, Some(AT_1130), None, "colo"),
                    up("backup"),
                ],
                Tone::Failover,
                "Serving from backup (failover) since 11:30 UTC — primary down: the global \
                 checker's verdict; replica down: the colo's verdict",
                Some(AT_1130),
            ),
            (
                "the backup down: still the primary, degraded",
                vec![
                    up("primary"),
                    ("replica", "down", 1, Some(AT_1130), Some("status 502"), "local"),
                ],
                Tone::Degraded,
                "Serving from primary — replica down: status 502, since 11:30 UTC",
                Some(AT_1130),
            ),
            (
                "everything down",
                vec![
                    ("primary", "down", 1, Some(AT_1121), Some("refused"), "local"),
                    ("replica", "down", 1, Some(1_785_500_000_000), Some("timeout"), "local"),
                ],
                Tone::Down,
                "No origin available since 11:21 UTC — primary down: connection refused; \
                 replica down: timed out",
                Some(AT_1121),
            ),
            (
                "down since yesterday: with the date",
                vec![("primary", "down", 1, Some(1_785_500_000_000), None, "local")],
                Tone::Down,
                "No origin available since 2026-07-31 12:13 UTC — primary down",
                Some(1_785_500_000_000),
            ),
        ];
        for (what, rows, tone, text, since) in cases {
            let h = headline(&doc("failover", rows));
            assert_eq!(
                (h.tone, h.text.as_str(), h.since_ms),
                (*tone, *text, *since),
                "{what}"
            );
        }
    }

    #[test]
    fn weighted_and_hash_steering() {
        for steering in ["weighted", "hash"] {
            let cases: &[(&str, Vec<Row<'_>>, Tone, &str)] = &[
                (
                    "one of two weighted down",
                    vec![
                        ("a", "down", 2, Some(AT_1121), Some("refused"), "local"),
                        ("b", "up", 1, None, None, "local"),
                        ("c", "up", 1, None, None, "local"),
                    ],
                    Tone::Failover,
                    "Serving from b and c (failover) since 11:21 UTC — a down: connection refused",
                ),
                (
                    "a spare down: degraded",
                    vec![
                        ("a", "up", 2, None, None, "local"),
                        ("spare", "down", 0, Some(AT_1130), Some("timeout"), "local"),
                    ],
                    Tone::Degraded,
                    "Serving from a — spare down: timed out, since 11:30 UTC",
                ),
                (
                    "only the spare left",
                    vec![
                        ("a", "down", 2, Some(AT_1121), Some("status 530"), "local"),
                        ("spare", "up", 0, None, None, "local"),
                    ],
                    Tone::Failover,
                    "Serving from spare (failover) since 11:21 UTC — a down: status 530",
                ),
                (
                    "all weights 0: all are preferred",
                    vec![
                        ("a", "up", 0, None, None, "local"),
                        ("b", "up", 0, None, None, "local"),
                    ],
                    Tone::Healthy,
                    "All origins healthy",
                ),
            ];
            for (what, rows, tone, text) in cases {
                let h = headline(&doc(steering, rows));
                assert_eq!(
                    (h.tone, h.text.as_str()),
                    (*tone, *text),
                    "{steering}: {what}"
                );
            }
        }
    }

    #[test]
    fn overrides_count_and_force_up_is_loud() {
        let both_up = [
            ("primary", "up", 1, None, None, "local"),
            ("replica", "up", 1, None, None, "local"),
        ];
        let mut drained = doc("failover", &both_up);
        drained["overrides"] = json!({"primary": {"mode": "drain", "set_at": AT_1121}});
        let h = headline(&drained);
        assert_eq!(h.tone, Tone::Failover);
        assert_eq!(
            h.text,
            "Serving from replica (failover) since 11:21 UTC — primary drained by an override"
        );

        let mut disabled = doc("failover", &both_up);
        disabled["overrides"] = json!([{"origin": "primary", "mode": "disable"},
                                       {"origin": "replica", "mode": "disable"}]);
        let h = headline(&disabled);
        assert_eq!(h.tone, Tone::Down);
        assert_eq!(
            h.text,
            "No origin available — primary disabled by an override; replica disabled by an override"
        );

        let mut forced = doc(
            "failover",
            &[
                (
                    "primary",
                    "down",
                    1,
                    Some(AT_1121),
                    Some("refused"),
                    "local",
                ),
                ("replica", "up", 1, None, None, "local"),
            ],
        );
        forced["overrides"] = json!({"primary": {"mode": "force-up", "set_at": AT_1130}});
        let h = headline(&forced);
        assert_eq!(h.tone, Tone::Degraded);
        assert_eq!(
            h.text,
            "All origins serving; primary FORCED UP by an override, whatever its health"
        );
        // Forcing up an origin that is up changes nothing about since when
        // it serves.
        let mut healthy_forced = doc(
            "failover",
            &[
                (
                    "primary",
                    "down",
                    1,
                    Some(AT_1121),
                    Some("refused"),
                    "local",
                ),
                ("replica", "up", 1, None, None, "local"),
            ],
        );
        healthy_forced["overrides"] = json!({"replica": {"mode": "force-up", "set_at": AT_1130}});
        assert_eq!(headline(&healthy_forced).since_ms, Some(AT_1121));
        // A cleared override (mode null) is no override.
        forced["overrides"] = json!({"primary": {"mode": null}});
        assert_eq!(headline(&forced).tone, Tone::Failover);
    }

    #[test]
    fn a_ramp_says_how_far_along_it_is() {
        let mut d = doc(
            "failover",
            &[
                ("primary", "up", 1, Some(AT_1130), None, "local"),
                ("replica", "up", 1, None, None, "local"),
            ],
        );
        d["origins"][0]["slow_start_pct"] = json!(25);
        let h = headline(&d);
        assert_eq!(h.tone, Tone::Healthy);
        assert_eq!(
            h.text,
            "All origins healthy; slow start: primary at 25 % of its requests"
        );
        d["origins"][1]["slow_start_pct"] = json!(60);
        assert!(headline(&d)
            .text
            .ends_with("; slow start: primary at 25 %, replica at 60 % of their requests"));
        d["origins"][0]["slow_start_pct"] = json!("25");
        d["origins"][1]["slow_start_pct"] = Value::Null;
        assert_eq!(
            headline(&d).text,
            "All origins healthy",
            "not a number: none"
        );
    }

    #[test]
    fn too_little_to_tell() {
        for d in [
            json!(null),
            json!({"origins": []}),
            json!({"origins": [1, {"state": "up"}]}),
        ] {
            let h = headline(&d);
            assert_eq!(
                (h.tone, h.text.as_str()),
                (Tone::Unknown, "Origin health unknown"),
                "{d}"
            );
        }
        // No steering or weight: read as the default (failover, weight 1).
        let h = headline(
            &json!({"origins": [{"name": "a", "state": "down"}, {"name": "b", "state": "up"}]}),
        );
        assert_eq!(h.text, "Serving from b (failover) — a down");
    }
}
