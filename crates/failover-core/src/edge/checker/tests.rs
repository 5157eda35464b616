//! The checker on a simulated clock, with its storage as a map.

use std::collections::BTreeMap;
use std::time::Duration;

use super::outbox::Settled;
use super::stored::{Restored, Writes, EVENT_PREFIX, OUTBOX_PREFIX};
use super::*;
use crate::notify::Kind;

/// Two origins, HEALTH_FALL 2, RISE 2, probes 15 s apart, two receivers
/// unless `notify` says otherwise.
fn config(notify: bool, min_interval_s: u64) -> WorkerConfig {
    let interval = min_interval_s.to_string();
    WorkerConfig::from_vars(|k| {
        Some(match k {
            "ORIGINS" => r#"[{"name":"primary","url":"https://a.example"},{"name":"replica","url":"https://b.example"}]"#.into(),
            "NOTIFY" if notify => r#"[{"format":"slack","url_var":"SLACK"},{"format":"json","url_var":"HOOK"}]"#.into(),
            "SLACK" => "https://hooks.example.com/s".into(),
            "HOOK" => "https://hooks.example.com/j".into(),
            "HEALTH_CHECKER" => "bound".into(),
            "NOTIFY_MIN_INTERVAL_S" => interval.clone(),
            _ => return None,
        })
    })
    .expect("valid")
}

/// The object's storage.
#[derive(Default)]
struct Storage(BTreeMap<String, String>);

impl Storage {
    fn apply(&mut self, w: Writes) {
        for k in w.delete {
            self.0.remove(&k);
        }
        for (k, v) in w.put {
            self.0.insert(k, v);
        }
    }
    fn restored(&self) -> Restored {
        let rows = |prefix: &str| {
            self.0
                .iter()
                .filter(|(k, _)| k.starts_with(prefix))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        };
        Restored {
            verdicts: self.0.get(VERDICTS_KEY).cloned(),
            meta: self.0.get(META_KEY).cloned(),
            events: rows(EVENT_PREFIX),
            outbox: rows(OUTBOX_PREFIX),
        }
    }
    fn count(&self, prefix: &str) -> usize {
        self.0.keys().filter(|k| k.starts_with(prefix)).count()
    }
}

/// Drives the machine as the Durable Object does: one wake-up at `now`,
/// every origin answering as `answer` says, every delivery answered with
/// `status`. Returns what was delivered.
fn wake(
    c: &mut Checker,
    store: &mut Storage,
    now: u64,
    answer: impl Fn(usize) -> Option<Failure>,
    status: Option<u16>,
) -> Vec<Delivery> {
    for origin in c.take_due_probes(now) {
        c.record_probe(origin, answer(origin), now);
    }
    c.probes_done(now);
    let mut delivered = Vec::new();
    for d in c.take_deliveries(now, Duration::from_secs(10)) {
        if c.settle(&d.key, status.into(), now) == Some(Settled::Delivered) {
            delivered.push(d);
        }
    }
    store.apply(c.take_writes());
    delivered
}

/// Wakes at every due time from `from` to `to`.
fn run(
    c: &mut Checker,
    store: &mut Storage,
    from: u64,
    to: u64,
    answer: impl Fn(u64, usize) -> Option<Failure>,
    status: impl Fn(u64) -> Option<u16>,
) -> Vec<Delivery> {
    let mut now = from;
    let mut out = Vec::new();
    while now <= to {
        out.extend(wake(c, store, now, |o| answer(now, o), status(now)));
        now = c.next_wake_ms().max(now + 1);
    }
    out
}

fn kinds(d: &[Delivery], webhook: &str) -> Vec<(Kind, Option<String>)> {
    d.iter()
        .filter(|d| d.webhook == webhook)
        .map(|d| (d.event.kind, d.event.origin.clone()))
        .collect()
}

const REFUSED: Option<Failure> = Some(Failure::Refused);

#[test]
fn an_outage_is_one_down_and_one_up_per_receiver() {
    let c_ = config(true, 0);
    let mut store = Storage::default();
    let mut c = Checker::new(&c_, Restored::default(), 1_000);
    c.set_site("www.example.com");
    // The primary is dead from 30 s to 90 s.
    let dead = |now: u64, o: usize| {
        (o == 0 && (30_000..90_000).contains(&now)).then_some(Failure::Refused)
    };
    let sent = run(&mut c, &mut store, 1_000, 200_000, dead, |_| Some(200));
    let want = vec![
        (Kind::OriginDown, Some("primary".to_string())),
        (Kind::OriginUp, Some("primary".to_string())),
    ];
    assert_eq!(kinds(&sent, "SLACK"), want);
    assert_eq!(kinds(&sent, "HOOK"), want);
    let down = &sent[0].event;
    assert_eq!(down.reason, "connection refused from probe");
    assert_eq!(down.site, "www.example.com");
    // The same id to every receiver; distinct per event.
    assert_eq!(sent[0].event.id, sent[1].event.id);
    assert_ne!(sent[0].event.id, sent[2].event.id);
    let recent: Vec<Kind> = c.recent(50).map(|e| e.kind).collect();
    assert_eq!(recent, [Kind::OriginUp, Kind::OriginDown], "newest first");
    assert_eq!(store.count(OUTBOX_PREFIX), 0, "all delivered");
    assert_eq!(store.count(EVENT_PREFIX), 2);
}

#[test]
fn an_isolates_word_makes_the_checker_probe_at_once_and_follow_up() {
    let mut store = Storage::default();
    let mut c = Checker::new(&config(true, 300), Restored::default(), 0);
    wake(&mut c, &mut store, 0, |_| None, Some(200));
    assert_eq!(c.next_wake_ms(), 15_000);
    assert!(!c.suspect("nobody", 2_000));
    assert!(c.suspect("primary", 2_000));
    assert_eq!(c.next_wake_ms(), 2_000, "at once");
    assert_eq!(c.take_due_probes(2_000), vec![0], "that origin alone");
    c.record_probe(0, REFUSED, 2_010);
    c.probes_done(2_010);
    assert_eq!(c.next_wake_ms(), 3_010, "a follow-up, not the next round");
    let sent = wake(&mut c, &mut store, 3_010, |_| REFUSED, Some(200));
    assert_eq!(
        kinds(&sent, "SLACK"),
        [(Kind::OriginDown, Some("primary".into()))]
    );
    assert!(
        !c.suspect("primary", 3_100),
        "down already: nothing to suspect"
    );
    // A good probe clears a suspicion at once.
    assert!(c.suspect("replica", 4_000));
    let sent = wake(&mut c, &mut store, 4_000, |_| None, Some(200));
    assert!(sent.is_empty());
    assert_eq!(c.next_wake_ms(), 15_000);
}

#[test]
fn all_down_and_all_up_follow_the_last_and_first_origin() {
    let mut store = Storage::default();
    let mut c = Checker::new(&config(true, 0), Restored::default(), 0);
    let outage = |now: u64, _o: usize| {
        (15_000..60_000)
            .contains(&now)
            .then_some(Failure::Status(530))
    };
    let sent = run(&mut c, &mut store, 0, 120_000, outage, |_| Some(204));
    let kinds: Vec<Kind> = kinds(&sent, "HOOK").into_iter().map(|(k, _)| k).collect();
    assert_eq!(
        kinds,
        [
            Kind::OriginDown,
            Kind::OriginDown,
            Kind::AllDown,
            Kind::OriginUp,
            Kind::AllUp,
            Kind::OriginUp
        ]
    );
    let all_down = sent.iter().find(|d| d.event.kind == Kind::AllDown).unwrap();
    assert_eq!(all_down.event.reason, "replica: status 530 from probe");
}

#[test]
fn a_ten_flip_storm_costs_at_most_two_messages_per_origin() {
    let mut store = Storage::default();
    let mut c = Checker::new(&config(true, 300), Restored::default(), 0);
    // Five minutes of a primary failing and answering two rounds at a
    // time: with fall 2 and rise 2, a flip every 30 s.
    let flappy = |now: u64, o: usize| {
        let round = now / 15_000;
        (o == 0 && round < 20 && (round / 2) % 2 == 1).then_some(Failure::Timeout)
    };
    let sent = run(&mut c, &mut store, 0, 3_600_000, flappy, |_| Some(200));
    let flips = c
        .recent(HISTORY)
        .filter(|e| e.origin.as_deref() == Some("primary"))
        .count();
    assert!(flips >= 10, "{flips} flips");
    let to_slack = kinds(&sent, "SLACK");
    assert!(to_slack.len() <= 2, "{to_slack:?}");
    assert_eq!(
        to_slack.last().map(|k| k.0),
        Some(Kind::OriginUp),
        "the last message tells the state"
    );
    let last = sent.iter().rev().find(|d| d.webhook == "SLACK").unwrap();
    assert!(last.event.more > 0, "the held changes are counted");
}

#[test]
fn a_failing_receiver_gets_every_event_within_the_cap_of_recovering() {
    let mut store = Storage::default();
    let mut c = Checker::new(&config(true, 0), Restored::default(), 0);
    let dead = |now: u64, o: usize| {
        (o == 0 && (15_000..45_000).contains(&now)).then_some(Failure::Refused)
    };
    // Receivers answer 500 for the first two minutes.
    let sent = run(&mut c, &mut store, 0, 300_000, dead, |now| {
        Some(if now < 120_000 { 500 } else { 200 })
    });
    let to_hook: Vec<&Delivery> = sent.iter().filter(|d| d.webhook == "HOOK").collect();
    assert_eq!(to_hook.len(), 2, "down and up, each once");
    assert!(to_hook[0].failures > 3, "retried: {}", to_hook[0].failures);
    assert_eq!(store.count(OUTBOX_PREFIX), 0);
}

#[test]
fn without_receivers_events_are_kept_and_nothing_is_queued() {
    let mut store = Storage::default();
    let mut c = Checker::new(&config(false, 300), Restored::default(), 0);
    let dead = |_now: u64, o: usize| (o == 0).then_some(Failure::Refused);
    let sent = run(&mut c, &mut store, 0, 60_000, dead, |_| Some(200));
    assert!(sent.is_empty());
    assert_eq!(c.recent(50).count(), 1);
    assert_eq!(c.next_wake_ms() % 15_000, 0, "rounds alone");
}

#[test]
fn storage_carries_events_ids_the_guard_and_the_outbox_across_a_restart() {
    let cfg = config(true, 300);
    let mut store = Storage::default();
    let mut c = Checker::new(&cfg, Restored::default(), 0);
    c.set_site("www.example.com");
    let dead = |_now: u64, o: usize| (o == 0).then_some(Failure::Refused);
    // Receivers down: the down event waits in the outbox.
    run(&mut c, &mut store, 0, 20_000, dead, |_| Some(503));
    assert_eq!(store.count(OUTBOX_PREFIX), 2);
    let before: Vec<Event> = c.recent(50).cloned().collect();
    let mut again = Checker::new(&cfg, store.restored(), 50_000);
    assert_eq!(again.recent(50).cloned().collect::<Vec<_>>(), before);
    assert_eq!(again.site(), "www.example.com");
    assert_eq!(again.verdicts(), c.verdicts(), "verdicts too");
    // Delivered after the restart, with the id it was queued with.
    let sent = run(
        &mut again,
        &mut store,
        50_000,
        120_000,
        |_, _| None,
        |_| Some(200),
    );
    let ids: Vec<&str> = sent
        .iter()
        .filter(|d| d.event.kind == Kind::OriginDown)
        .map(|d| d.event.id.as_str())
        .collect();
    assert_eq!(ids, [before[0].id.as_str(), before[0].id.as_str()]);
    // New events continue the count: no id is reused.
    let all_ids: Vec<String> = again.recent(50).map(|e| e.id.clone()).collect();
    let mut unique = all_ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), all_ids.len(), "{all_ids:?}");
    // The guard remembered the down message: the up after it waits for
    // the interval, and is sent once it ends.
    assert!(!sent.iter().any(|d| d.event.kind == Kind::OriginUp));
    let later = run(
        &mut again,
        &mut store,
        120_001,
        400_000,
        |_, _| None,
        |_| Some(200),
    );
    assert_eq!(
        kinds(&later, "SLACK"),
        [(Kind::OriginUp, Some("primary".into()))]
    );
}

#[test]
fn the_history_keeps_the_newest_five_hundred() {
    let cfg = config(false, 0);
    let mut store = Storage::default();
    let mut c = Checker::new(&cfg, Restored::default(), 0);
    // fall 2 / rise 2 and 15 s rounds: a flip every other round.
    let flappy =
        |now: u64, o: usize| (o == 0 && (now / 30_000) % 2 == 1).then_some(Failure::Refused);
    run(&mut c, &mut store, 0, 15_000 * 1_300, flappy, |_| None);
    assert_eq!(c.recent(usize::MAX).count(), HISTORY);
    assert_eq!(store.count(EVENT_PREFIX), HISTORY);
    let newest = c.recent(1).next().unwrap().id.clone();
    let again = Checker::new(&cfg, store.restored(), 0);
    assert_eq!(again.recent(1).next().unwrap().id, newest);
}

#[test]
fn junk_in_storage_is_dropped_not_trusted() {
    let cfg = config(true, 300);
    let mut store = Storage::default();
    store
        .0
        .insert("event:0000000000000003".into(), "not json".into());
    store.0.insert("event:x".into(), "{}".into());
    store
        .0
        .insert("outbox:0000000000000001:SLACK".into(), "[]".into());
    store.0.insert("outbox:0000000000000002:GONE".into(), r#"{"webhook":"GONE","event":{"id":"1-1","type":"origin.down","at_ms":1,"source":"edge"},"queued_ms":0,"next_ms":0}"#.into());
    store.0.insert(META_KEY.into(), "{bad".into());
    let mut c = Checker::new(&cfg, store.restored(), 7);
    store.apply(c.take_writes());
    assert_eq!(store.count(EVENT_PREFIX), 0);
    assert_eq!(
        store.count(OUTBOX_PREFIX),
        0,
        "junk and a receiver no longer configured"
    );
    assert!(store.0.contains_key(META_KEY));
    assert_eq!(c.recent(50).count(), 0);
}

#[test]
fn a_counter_lost_with_its_events_kept_never_reuses_a_key() {
    let cfg = config(false, 0);
    let mut store = Storage::default();
    let mut c = Checker::new(&cfg, Restored::default(), 0);
    let dead = |_now: u64, o: usize| (o == 0).then_some(Failure::Refused);
    run(&mut c, &mut store, 0, 20_000, dead, |_| None);
    store.0.remove(META_KEY);
    let mut again = Checker::new(&cfg, store.restored(), 99);
    run(
        &mut again,
        &mut store,
        100_000,
        200_000,
        |_, _| None,
        |_| None,
    );
    assert_eq!(store.count(EVENT_PREFIX), 2, "the down kept, the up added");
}

#[test]
fn events_cross_to_isolates_as_json_and_junk_is_skipped() {
    let mut store = Storage::default();
    let mut c = Checker::new(&config(false, 0), Restored::default(), 0);
    let dead = |_now: u64, o: usize| (o == 0).then_some(Failure::Refused);
    run(&mut c, &mut store, 0, 20_000, dead, |_| None);
    let text = events_text(c.recent(50));
    assert_eq!(
        parse_events(&text),
        c.recent(50).cloned().collect::<Vec<_>>()
    );
    assert_eq!(parse_events("[1, {\"id\": 2}]"), vec![]);
    assert_eq!(parse_events("not json"), vec![]);
}

#[test]
fn query_params_as_written() {
    let url = "https://health-checker.internal/suspect?origin=primary&site=www.example.com#x";
    assert_eq!(query_param(url, "origin"), Some("primary"));
    assert_eq!(query_param(url, "site"), Some("www.example.com"));
    assert_eq!(query_param(url, "none"), None);
    assert_eq!(query_param("https://h/verdicts", "site"), None);
    assert_eq!(query_param("https://h/v?site", "site"), None);
    assert_eq!(query_param("https://h/v?site=", "site"), Some(""));
}

/// Two sites on two nodes: node home's origins fail; each site's events
/// name the site, and `all.down` / `all.up` are a site's, not the Worker's.
#[test]
fn with_several_sites_events_name_their_site_and_all_is_per_site() {
    let config = WorkerConfig::from_vars(|k| {
        Some(match k {
            "SITES" => r#"[
              {"name":"www","hosts":["www.example"],"origins":[
                {"name":"www-home","url":"https://wh.example","node":"home"},
                {"name":"www-vps","url":"https://wv.example","node":"vps"}]},
              {"name":"dash","hosts":["dash.example"],"origins":[
                {"name":"dash-home","url":"https://dh.example","node":"home"}]}
            ]"#
            .into(),
            "NOTIFY" => r#"[{"format":"json","url_var":"HOOK"}]"#.into(),
            "HOOK" => "https://hooks.example.com/j".into(),
            "HEALTH_CHECKER" => "bound".into(),
            "NOTIFY_MIN_INTERVAL_S" => "0".into(),
            _ => return None,
        })
    })
    .expect("valid");
    let mut store = Storage::default();
    let mut c = Checker::new(&config, Restored::default(), 0);
    c.set_site("www.example");
    // Node home (origins 0 and 2) has no connector for 45 s.
    let outage = |now: u64, o: usize| {
        ((15_000..60_000).contains(&now) && o != 1).then_some(Failure::Status(530))
    };
    let sent = run(&mut c, &mut store, 0, 120_000, outage, |_| Some(204));
    let seen: Vec<(Kind, Option<String>, String)> = sent
        .iter()
        .filter(|d| d.webhook == "HOOK")
        .map(|d| (d.event.kind, d.event.origin.clone(), d.event.site.clone()))
        .collect();
    let down = |o: &str, s: &str| (Kind::OriginDown, Some(o.to_string()), s.to_string());
    assert!(seen.contains(&down("www-home", "www")), "{seen:?}");
    assert!(seen.contains(&down("dash-home", "dash")), "{seen:?}");
    let all: Vec<(Kind, String)> = seen
        .iter()
        .filter(|(k, _, _)| matches!(k, Kind::AllDown | Kind::AllUp))
        .map(|(k, _, s)| (*k, s.clone()))
        .collect();
    assert_eq!(
        all,
        [
            (Kind::AllDown, "dash".to_string()),
            (Kind::AllUp, "dash".to_string())
        ],
        "www kept www-vps: no all.down for it"
    );
}
