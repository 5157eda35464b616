//! One request's route: the steering policy's attempt order, slow start's
//! hold-back of origins still ramping up, session affinity on top, and the
//! origin the request was meant for (so that `x-failover` says when it was
//! served elsewhere). The fast path's JS twin is `route` in
//! src/js/route.mjs; both compose the same pieces
//! ([`crate::edge::steering::attempt_order`],
//! [`affinity::with_affinity`]), which are held to
//! tests/fixtures/steering.json. [`route_ramped`] has no twin: the fast
//! path is given no lease while a ramp is in effect (`Isolate::lease`).

use crate::edge::affinity::AffinityMode;
use crate::edge::affinity::{self, SetCookie};
use crate::edge::config::WorkerConfig;
use crate::edge::slow_start::{draw, held_back};
use crate::edge::steering::{attempt_order, Policy};

/// Where one request goes, decided before its first attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    /// Origins to try, in order: every origin, down ones last.
    pub order: Vec<usize>,
    /// The origin the policy (or the affinity cookie) meant this request
    /// for, health aside: serving from any other sets `x-failover`.
    pub intended: usize,
    /// Whether to (re)write the affinity cookie for the origin that serves.
    pub set_cookie: SetCookie,
    /// The origin a valid affinity cookie names, if any (a weight-0 one
    /// only while no origin of weight > 0 is up).
    pub pinned: Option<usize>,
    /// Whether some origin of weight > 0 is up: then a weight-0 origin is
    /// neither honoured as a pin nor pinned to (`sets_cookie_for`).
    pub weighted_up: bool,
}

impl Route {
    /// Whether the response `served` by that origin sets the affinity
    /// cookie to it. Never to a weight-0 origin while a weighted one is up:
    /// a backup that served one request during a failed attempt must not
    /// keep the client for `AFFINITY_TTL_S`.
    pub fn sets_cookie_for(&self, config: &WorkerConfig, served: usize) -> bool {
        self.set_cookie.emit_for(served)
            && config
                .origins
                .get(served)
                .is_some_and(|o| affinity::may_pin(o.weight, self.weighted_up))
    }
}

/// The route for a request. `key` is its hash key (or None), `cookie_header`
/// its Cookie header when affinity is on, `random` a uniform number in
/// [0, 1) for `weighted`. No origin is ramping up (see [`route_ramped`]).
pub fn route(
    config: &WorkerConfig,
    is_up: impl Fn(usize) -> bool,
    key: Option<&str>,
    cookie_header: Option<&str>,
    random: f64,
) -> Route {
    route_ramped(config, is_up, |_| 1.0, key, cookie_header, random)
}

/// [`route`] with slow start: `share(i)` is origin i's ramp share now
/// (`SlowStart::share`; 1 for all of its requests). A ramping origin the
/// policy would pick is held back with the rest of the probability
/// ([`crate::edge::slow_start`]), drawn from `random` (or, under `hash`,
/// from the key); a request an affinity cookie pins is not held back, and
/// a held-back request was meant for the origin that serves it: no
/// `x-failover`.
pub fn route_ramped(
    config: &WorkerConfig,
    is_up: impl Fn(usize) -> bool,
    share: impl Fn(usize) -> f64,
    key: Option<&str>,
    cookie_header: Option<&str>,
    random: f64,
) -> Route {
    let mut policy_order = attempt_order(config.steering, &config.candidates(&is_up), key, random);
    let policy = config.steering;
    let held = held_back(
        &policy_order,
        |i| {
            is_up(i)
                && (policy == Policy::Failover
                    || config.origins.get(i).is_some_and(|o| o.weight > 0))
        },
        &share,
        |i| {
            let name = config.origins.get(i).map_or("", |o| o.name.as_str());
            draw(policy, key, random, i, name)
        },
    );
    // The first origin not held back goes first; the held-back ones keep
    // their places after it, so a failure there still tries them.
    if let Some(at) = policy_order.iter().position(|o| !held.contains(o)) {
        policy_order[..=at].rotate_right(1);
    }
    let weighted_up = config
        .origins
        .iter()
        .enumerate()
        .any(|(i, o)| o.weight > 0 && is_up(i));
    let pinned = match config.affinity.mode {
        AffinityMode::Cookie => affinity::pinned_origin(&config.origins, cookie_header),
        AffinityMode::Off => None,
    }
    .filter(|&p| {
        config
            .origins
            .get(p)
            .is_some_and(|o| affinity::may_pin(o.weight, weighted_up))
    });
    let meant = pinned.or_else(|| {
        attempt_order(config.steering, &config.candidates(|_| true), key, random)
            .into_iter()
            .find(|o| !held.contains(o))
    });
    let plan = affinity::with_affinity(
        &config.affinity,
        pinned,
        pinned.is_some_and(&is_up),
        policy_order,
    );
    let mut order = plan.order;
    // The origin a request was meant for goes first whenever it is up, so
    // that `x-failover` means "the intended origin was down or failed".
    if let Some(m) = meant.filter(|&m| is_up(m)) {
        if let Some(at) = order.iter().position(|&o| o == m) {
            let m = order.remove(at);
            order.insert(0, m);
        }
    }
    Route {
        intended: meant.or_else(|| order.first().copied()).unwrap_or(0),
        order,
        set_cookie: plan.set_cookie,
        pinned,
        weighted_up,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(vars: &[(&str, &str)]) -> WorkerConfig {
        WorkerConfig::from_vars(|k| {
            if k == "ORIGINS" {
                return Some(
                    r#"[{"name":"a","url":"https://a.example","weight":1},
                        {"name":"b","url":"https://b.example","weight":1},
                        {"name":"c","url":"https://c.example","weight":2}]"#
                        .to_string(),
                );
            }
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        })
        .unwrap()
    }

    #[test]
    fn failover_is_todays_order_and_intends_the_primary() {
        let c = config(&[]);
        let r = route(&c, |i| i != 0, None, None, 0.5);
        assert_eq!(r.order, vec![1, 2, 0]);
        assert_eq!(r.intended, 0);
        assert_eq!(r.set_cookie, SetCookie::Never);
    }

    #[test]
    fn an_intended_origin_that_is_up_always_goes_first() {
        let c = config(&[("STEERING", "weighted")]);
        for step in 0..100 {
            let random = f64::from(step) / 100.0;
            let all_up = route(&c, |_| true, None, None, random);
            assert_eq!(all_up.order[0], all_up.intended, "random {random}");
            let one_down = route(&c, |i| i != 1, None, None, random);
            if one_down.intended != 1 {
                assert_eq!(one_down.order[0], one_down.intended, "random {random}");
            }
            assert_eq!(*one_down.order.last().unwrap(), 1, "down origins last");
        }
    }

    proptest::proptest! {
        /// Whatever the health, the ramp shares and the draw: the ramped
        /// route holds every origin once, an up origin first whenever one
        /// is up, down ones last, and the origin it was meant for first
        /// whenever that one is up; with no origin ramping it is the plain
        /// route.
        #[test]
        fn a_ramped_route_is_a_route(
            policy in proptest::sample::select(vec!["failover", "weighted", "hash"]),
            up in proptest::collection::vec(proptest::bool::ANY, 3),
            shares in proptest::collection::vec(0.0f64..=1.0, 3),
            key in proptest::option::of("[a-z0-9]{0,6}"),
            random in 0.0f64..1.0,
        ) {
            let c = config(&[("STEERING", policy)]);
            let ramped = route_ramped(&c, |i| up[i], |i| shares[i], key.as_deref(), None, random);
            let mut sorted = ramped.order.clone();
            sorted.sort_unstable();
            proptest::prop_assert_eq!(sorted, vec![0, 1, 2]);
            let ups = up.iter().filter(|&&u| u).count();
            proptest::prop_assert!(ramped.order[..ups].iter().all(|&i| up[i]));
            if up[ramped.intended] {
                proptest::prop_assert_eq!(ramped.order[0], ramped.intended);
            }
            let plain = route(&c, |i| up[i], key.as_deref(), None, random);
            let unramped = route_ramped(&c, |i| up[i], |_| 1.0, key.as_deref(), None, random);
            proptest::prop_assert_eq!(plain, unramped);
        }
    }

    #[test]
    fn a_valid_cookie_pins_while_up_and_is_intended_while_down() {
        let c = config(&[("AFFINITY", "cookie")]);
        let cookie = format!(
            "x=1; __tf_affinity={}",
            affinity::cookie_value(&c.origins, 2)
        );
        let up = route(&c, |_| true, None, Some(&cookie), 0.1);
        assert_eq!((up.order[0], up.intended, up.pinned), (2, 2, Some(2)));
        assert_eq!(up.set_cookie, SetCookie::Never);
        let down = route(&c, |i| i != 2, None, Some(&cookie), 0.1);
        assert_eq!((down.order[0], down.intended), (0, 2));
        let forged = route(&c, |_| true, None, Some("__tf_affinity=c"), 0.1);
        assert_eq!(
            (forged.pinned, forged.set_cookie),
            (None, SetCookie::Always)
        );
    }
}
