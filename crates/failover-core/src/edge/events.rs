//! The events a health change makes, for a person: `origin.down` /
//! `origin.up` with the evidence in words, and `all.down` / `all.up` when
//! none / one of the origins serves. The global checker's are the ones that
//! notify and that its history keeps; an isolate keeps its own last few for
//! its status page, as one isolate's view.

use crate::edge::classify::Failure;
use crate::edge::health::Transition;
use crate::edge::target::authority;
use crate::notify::{Event, Kind, Source};
use crate::streak::Verdict;

/// Ids unique per event and the same on every retry of it:
/// `<epoch>-<seq>`, where `seq` counts up in the checker's storage and
/// `epoch` is when that counter started (so a checker whose storage was
/// wiped never repeats an id a receiver already saw).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventIds {
    epoch_ms: u64,
    next_seq: u64,
}

impl EventIds {
    /// A counter that started at `epoch_ms`, next handing out `next_seq`.
    pub fn new(epoch_ms: u64, next_seq: u64) -> EventIds {
        EventIds {
            epoch_ms,
            next_seq: next_seq.max(1),
        }
    }

    /// The next event's sequence number and id.
    pub fn take(&mut self) -> (u64, String) {
        let seq = self.next_seq;
        self.next_seq = seq.saturating_add(1);
        (seq, format!("{}-{seq}", self.epoch_ms))
    }

    /// A number from the same rising counter that names no event: the
    /// queue position of a message the flap guard held back and lets go
    /// later (its event kept its own number).
    pub fn take_number(&mut self) -> u64 {
        self.take().0
    }

    /// When the counter started.
    pub fn epoch_ms(&self) -> u64 {
        self.epoch_ms
    }

    /// The sequence number the next event gets.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }
}

/// A probe's failure in words a person reads in a chat message.
pub fn evidence(failure: Failure) -> String {
    match failure {
        Failure::Refused => "connection refused".into(),
        Failure::Network => "connection failed".into(),
        Failure::Timeout => "no answer in time".into(),
        Failure::Status(code) => format!("status {code}"),
        Failure::AccessLogin => "Access login page (service token missing or wrong)".into(),
    }
}

/// `origin.down` or `origin.up` for a flip of origin `name`.
pub fn origin_event(id: String, name: &str, t: &Transition, at_ms: u64, site: &str) -> Event {
    Event {
        id,
        kind: match t.to {
            Verdict::Down => Kind::OriginDown,
            Verdict::Up => Kind::OriginUp,
        },
        origin: Some(name.to_owned()),
        at_ms,
        reason: t.reason.clone(),
        site: site.to_owned(),
        source: Source::Edge,
        node: None,
        from: Some(t.from.as_str().to_owned()),
        to: Some(t.to.as_str().to_owned()),
        more: 0,
    }
}

/// `all.down` when a flip left no origin serving, `all.up` when one serves
/// again; None when the flip changed neither.
pub fn all_change(any_up_before: bool, any_up_after: bool) -> Option<Kind> {
    match (any_up_before, any_up_after) {
        (true, false) => Some(Kind::AllDown),
        (false, true) => Some(Kind::AllUp),
        _ => None,
    }
}

/// The `all.*` event `kind`, its reason the flip that caused it
/// (`"replica: status 530 from probe"`).
pub fn all_event(id: String, kind: Kind, cause: &Event) -> Event {
    Event {
        id,
        kind,
        origin: None,
        at_ms: cause.at_ms,
        reason: format!(
            "{}: {}",
            cause.origin.as_deref().unwrap_or("?"),
            cause.reason
        ),
        site: cause.site.clone(),
        source: Source::Edge,
        node: None,
        from: None,
        to: None,
        more: 0,
    }
}

/// The public hostname of a request URL, for an event's `site`: its host
/// without the port, lower-case; None unless it looks like a host name (it
/// ends up in chat messages and headers).
pub fn site_of(url: &str) -> Option<String> {
    let authority = authority(url);
    let host = match authority.rfind(':') {
        Some(colon) if !authority.ends_with(']') => &authority[..colon],
        _ => authority,
    };
    let ok = !host.is_empty()
        && host.len() <= 253
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'[' | b']' | b':'))
        && !host.contains('@');
    ok.then(|| host.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::edge::shared::Source as VerdictSource;

    fn flip(to: Verdict, reason: &str) -> Transition {
        Transition {
            origin: 0,
            from: match to {
                Verdict::Up => Verdict::Down,
                Verdict::Down => Verdict::Up,
            },
            to,
            reason: reason.into(),
            source: VerdictSource::Local,
        }
    }

    #[test]
    fn ids_count_up_under_their_epoch() {
        let mut ids = EventIds::new(1_700, 0);
        assert_eq!(ids.take(), (1, "1700-1".to_string()));
        assert_eq!(ids.take(), (2, "1700-2".to_string()));
        assert_eq!((ids.epoch_ms(), ids.next_seq()), (1_700, 3));
    }

    #[test]
    fn flips_become_events_and_all_down_names_its_cause() {
        let down = origin_event(
            "e-1".into(),
            "replica",
            &flip(Verdict::Down, "status 530 from probe"),
            5,
            "www.example.com",
        );
        assert_eq!(down.kind, Kind::OriginDown);
        assert_eq!(
            (down.from.as_deref(), down.to.as_deref()),
            (Some("up"), Some("down"))
        );
        assert_eq!(down.reason, "status 530 from probe");
        assert_eq!(all_change(true, false), Some(Kind::AllDown));
        assert_eq!(all_change(false, true), Some(Kind::AllUp));
        assert_eq!(all_change(true, true), None);
        assert_eq!(all_change(false, false), None);
        let all = all_event("e-2".into(), Kind::AllDown, &down);
        assert_eq!(all.origin, None);
        assert_eq!(all.subject(), "*");
        assert_eq!(all.reason, "replica: status 530 from probe");
        let up = origin_event(
            "e-3".into(),
            "primary",
            &flip(Verdict::Up, "2 good probes"),
            9,
            "",
        );
        assert_eq!(up.kind, Kind::OriginUp);
    }

    #[test]
    fn evidence_reads_as_words() {
        assert_eq!(evidence(Failure::Refused), "connection refused");
        assert_eq!(evidence(Failure::Status(502)), "status 502");
    }

    #[test]
    fn site_is_a_host_or_nothing() {
        let rows = [
            ("https://www.example.com/a?b", Some("www.example.com")),
            ("https://WWW.Example.com:8443/", Some("www.example.com")),
            ("http://127.0.0.1:8787/x", Some("127.0.0.1")),
            ("http://[::1]:8787/x", Some("[::1]")),
            ("https://user@evil/", None),
            ("https:///x", None),
            ("not a url", None),
        ];
        for (url, want) in rows {
            assert_eq!(site_of(url).as_deref(), want, "{url}");
        }
    }
}
