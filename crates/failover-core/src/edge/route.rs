//! One request's route: the steering policy's attempt order, slow start's
//! hold-back of origins still ramping up, session affinity on top, and the
//! origin the request was meant for (so that `x-failover` says when it was
//! served elsewhere), with operators' overrides folded in. The fast path's
//! JS twin is `route` in src/js/route.mjs; both compose the same pieces
//! ([`crate::edge::steering::attempt_order`],
//! [`affinity::with_affinity`]), which are held to
//! tests/fixtures/steering.json. [`route_ramped`] has no twin: the fast
//! path is given no lease while a ramp is in effect (`Isolate::lease`).

use crate::edge::affinity::AffinityMode;
use crate::edge::affinity::{self, SetCookie};
use crate::edge::config::Site;
use crate::edge::overrides::Standing;
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
    /// What the indices above are offset by: 0 in the site's own indices,
    /// `Site::first` after [`Route::in_global`].
    pub first: usize,
}

impl Route {
    /// Whether the response `served` by that origin sets the affinity
    /// cookie to it. Never to a weight-0 origin while a weighted one is up:
    /// a backup that served one request during a failed attempt must not
    /// keep the client for `AFFINITY_TTL_S`.
    /// `served` is an index of the same kind as the route's (the site's,
    /// or global after [`Route::in_global`]).
    pub fn sets_cookie_for(&self, site: &Site, served: usize) -> bool {
        self.set_cookie.emit_for(served)
            && served
                .checked_sub(self.first)
                .and_then(|i| site.origins.get(i))
                .is_some_and(|o| affinity::may_pin(o.weight, self.weighted_up))
    }

    /// The same route in the config's global indices: `site`'s own index
    /// plus where its origins begin (`Site::first`), so that health,
    /// overrides and attempts, which are global, read it as it is.
    pub fn in_global(self, site: &Site) -> Route {
        let first = site.first;
        let set_cookie = match self.set_cookie {
            SetCookie::UnlessServedBy(p) => SetCookie::UnlessServedBy(p + first),
            other => other,
        };
        Route {
            order: self.order.into_iter().map(|i| i + first).collect(),
            intended: self.intended + first,
            set_cookie,
            pinned: self.pinned.map(|p| p + first),
            weighted_up: self.weighted_up,
            first,
        }
    }
}

/// The route for a request. `is_up` is the health map's verdict (silent
/// origins routed around as if down), `standing` each origin's override at
/// this instant (`Standing::Auto` past its end), `key` the request's hash
/// key (or None), `cookie_header` its Cookie header when affinity is on,
/// `random` a uniform number in [0, 1) for `weighted`.
///
/// Overrides fold in as health does: an origin is up for the policy when
/// [`Standing::routable`] says so (a draining origin only for a request
/// pinned to it), and a request is meant for an origin only if its
/// override lets it be meant for anyone ([`Standing::intendable`]), so
/// traffic moved on purpose carries no `x-failover`. Held origins (disable,
/// a drain past its end) come after the routable ones like down ones; the
/// full path then puts them before the down ones
/// ([`crate::edge::overrides::last_resort`]).
pub fn route(
    site: &Site,
    is_up: impl Fn(usize) -> bool,
    standing: &[Standing],
    key: Option<&str>,
    cookie_header: Option<&str>,
    random: f64,
) -> Route {
    route_ramped(site, is_up, standing, |_| 1.0, key, cookie_header, random)
}

/// [`route`] with slow start: `share(i)` is origin i's ramp share now
/// (`SlowStart::share`; 1 for all of its requests). A ramping origin the
/// policy would pick is held back with the rest of the probability
/// ([`crate::edge::slow_start`]), drawn from `random` (or, under `hash`,
/// from the key); a request an affinity cookie pins is not held back, and
/// a held-back request was meant for the origin that serves it: no
/// `x-failover`.
///
/// With overrides, the ramp applies only where health decides
/// ([`Standing::ramps`]): a forced-up origin gets all of its requests at
/// once, and a drained or disabled one is not routable at all, so no ramp
/// lets requests back to it; nor is a request held back *to* one (the
/// ramping origin then takes it, as when no other origin is up).
pub fn route_ramped(
    site: &Site,
    is_up: impl Fn(usize) -> bool,
    standing: &[Standing],
    share: impl Fn(usize) -> f64,
    key: Option<&str>,
    cookie_header: Option<&str>,
    random: f64,
) -> Route {
    let standing_of = |i: usize| standing.get(i).copied().unwrap_or(Standing::Auto);
    let cookie_pin = match site.affinity.mode {
        AffinityMode::Cookie => affinity::pinned_origin(&site.origins, cookie_header),
        AffinityMode::Off => None,
    };
    let routable = |i: usize| standing_of(i).routable(is_up(i), cookie_pin == Some(i));
    let mut policy_order = attempt_order(site.steering, &site.candidates(routable), key, random);
    let policy = site.steering;
    let held = held_back(
        &policy_order,
        |i| {
            routable(i)
                && (policy == Policy::Failover || site.origins.get(i).is_some_and(|o| o.weight > 0))
        },
        |i| {
            if standing_of(i).ramps() {
                share(i)
            } else {
                1.0
            }
        },
        |i| {
            let name = site.origins.get(i).map_or("", |o| o.name.as_str());
            draw(policy, key, random, i, name)
        },
    );
    // The first origin not held back goes first; the held-back ones keep
    // their places after it, so a failure there still tries them.
    if let Some(at) = policy_order.iter().position(|o| !held.contains(o)) {
        policy_order[..=at].rotate_right(1);
    }
    let weighted_up = site
        .origins
        .iter()
        .enumerate()
        .any(|(i, o)| o.weight > 0 && routable(i));
    let pinned = cookie_pin.filter(|&p| {
        site.origins
            .get(p)
            .is_some_and(|o| affinity::may_pin(o.weight, weighted_up))
    });
    let meant = pinned.or_else(|| {
        attempt_order(
            site.steering,
            &site.candidates(|i| standing_of(i).intendable()),
            key,
            random,
        )
        .into_iter()
        .find(|o| !held.contains(o))
    });
    let plan = affinity::with_affinity(
        &site.affinity,
        pinned,
        pinned.is_some_and(routable),
        policy_order,
    );
    let mut order = plan.order;
    // The origin a request was meant for goes first whenever it is up, so
    // that `x-failover` means "the intended origin was down or failed".
    if let Some(m) = meant.filter(|&m| routable(m)) {
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
        first: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(vars: &[(&str, &str)]) -> crate::edge::config::WorkerConfig {
        crate::edge::config::WorkerConfig::from_vars(|k| {
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
        let r = route(c.site(), |i| i != 0, &[], None, None, 0.5);
        assert_eq!(r.order, vec![1, 2, 0]);
        assert_eq!(r.intended, 0);
        assert_eq!(r.set_cookie, SetCookie::Never);
    }

    #[test]
    fn an_intended_origin_that_is_up_always_goes_first() {
        let c = config(&[("STEERING", "weighted")]);
        for step in 0..100 {
            let random = f64::from(step) / 100.0;
            let all_up = route(c.site(), |_| true, &[], None, None, random);
            assert_eq!(all_up.order[0], all_up.intended, "random {random}");
            let one_down = route(c.site(), |i| i != 1, &[], None, None, random);
            if one_down.intended != 1 {
                assert_eq!(one_down.order[0], one_down.intended, "random {random}");
            }
            assert_eq!(*one_down.order.last().unwrap(), 1, "down origins last");
        }
    }

    fn standing_in() -> impl proptest::strategy::Strategy<Value = Standing> {
        proptest::sample::select(vec![
            Standing::Auto,
            Standing::Auto,
            Standing::ForcedUp,
            Standing::Draining,
            Standing::Held,
        ])
    }

    proptest::proptest! {
        /// Whatever the health, the overrides, the ramp shares and the
        /// draw: the ramped route holds every origin once, an origin
        /// requests may go to first whenever there is one (a held-back
        /// request never lands on a drained, disabled or down origin while
        /// another may take it), and the origin it was meant for first
        /// whenever requests may go to it; with no origin ramping it is the
        /// plain route, and a ramp on an origin that is not `auto` changes
        /// nothing.
        #[test]
        fn a_ramped_route_is_a_route(
            policy in proptest::sample::select(vec!["failover", "weighted", "hash"]),
            up in proptest::collection::vec(proptest::bool::ANY, 3),
            standing in proptest::collection::vec(standing_in(), 3),
            shares in proptest::collection::vec(0.0f64..=1.0, 3),
            key in proptest::option::of("[a-z0-9]{0,6}"),
            random in 0.0f64..1.0,
        ) {
            let c = config(&[("STEERING", policy)]);
            let ramped = route_ramped(
                c.site(), |i| up[i], &standing, |i| shares[i], key.as_deref(), None, random,
            );
            let mut sorted = ramped.order.clone();
            sorted.sort_unstable();
            proptest::prop_assert_eq!(sorted, vec![0, 1, 2]);
            let routable = |i: usize| standing[i].routable(up[i], false);
            let n = (0..3).filter(|&i| routable(i)).count();
            proptest::prop_assert!(ramped.order[..n].iter().all(|&i| routable(i)));
            if routable(ramped.intended) {
                proptest::prop_assert_eq!(ramped.order[0], ramped.intended);
            }
            let plain = route(c.site(), |i| up[i], &standing, key.as_deref(), None, random);
            let unramped = route_ramped(
                c.site(), |i| up[i], &standing, |_| 1.0, key.as_deref(), None, random,
            );
            proptest::prop_assert_eq!(&plain, &unramped);
            let auto_only = route_ramped(
                c.site(),
                |i| up[i],
                &standing,
                |i| if standing[i] == Standing::Auto { shares[i] } else { 1.0 },
                key.as_deref(),
                None,
                random,
            );
            proptest::prop_assert_eq!(ramped, auto_only);
        }
    }

    /// Overrides × slow start × pin, under `failover`, with a share of 0
    /// (held back whenever another origin may take the request) or 1: where
    /// the request goes first, and whom it was meant for.
    #[test]
    fn overrides_and_slow_start_combine() {
        use Standing::*;
        let c = config(&[("AFFINITY", "cookie")]);
        let pin_a = format!("__tf_affinity={}", affinity::cookie_value(&c.origins, 0));
        // (standings, ramping: share 0, cookie, first, intended)
        type Row<'a> = (&'a [Standing], &'a [usize], Option<&'a str>, usize, usize);
        let table: &[Row] = &[
            // A ramping primary is held back to b: b was meant, no x-failover.
            (&[Auto, Auto, Auto], &[0], None, 1, 1),
            // Forced up: all of its requests at once.
            (&[ForcedUp, Auto, Auto], &[0], None, 0, 0),
            // Held back past b, ramping too, to c.
            (&[Auto, Auto, Auto], &[0, 1], None, 2, 2),
            // a disabled: b ramps against c.
            (&[Held, Auto, Auto], &[1], None, 2, 2),
            // Nobody but disabled origins to hold b back to: b takes it.
            (&[Held, Auto, Held], &[1], None, 1, 1),
            // A ramping origin is not held back to a draining one.
            (&[Auto, Draining, Held], &[0], None, 0, 0),
            // A forced-up b takes what a ramping a gives way.
            (&[Auto, ForcedUp, Auto], &[0], None, 1, 1),
            // Disabled and ramping: no ramp brings requests back to it.
            (&[Held, Auto, Auto], &[0], None, 1, 1),
            // Pinned requests are not ramped, draining or not.
            (&[Auto, Auto, Auto], &[0], Some(&pin_a), 0, 0),
            (&[Draining, Auto, Auto], &[0], Some(&pin_a), 0, 0),
        ];
        for (standing, ramping, cookie, first, intended) in table {
            let share = |i: usize| if ramping.contains(&i) { 0.0 } else { 1.0 };
            let r = route_ramped(c.site(), |_| true, standing, share, None, *cookie, 0.5);
            assert_eq!(
                (r.order[0], r.intended),
                (*first, *intended),
                "{standing:?} ramping {ramping:?} {cookie:?}"
            );
        }
    }

    #[test]
    fn a_valid_cookie_pins_while_up_and_is_intended_while_down() {
        let c = config(&[("AFFINITY", "cookie")]);
        let cookie = format!(
            "x=1; __tf_affinity={}",
            affinity::cookie_value(&c.origins, 2)
        );
        let up = route(c.site(), |_| true, &[], None, Some(&cookie), 0.1);
        assert_eq!((up.order[0], up.intended, up.pinned), (2, 2, Some(2)));
        assert_eq!(up.set_cookie, SetCookie::Never);
        let down = route(c.site(), |i| i != 2, &[], None, Some(&cookie), 0.1);
        assert_eq!((down.order[0], down.intended), (0, 2));
        let forged = route(c.site(), |_| true, &[], None, Some("__tf_affinity=c"), 0.1);
        assert_eq!(
            (forged.pinned, forged.set_cookie),
            (None, SetCookie::Always)
        );
    }

    /// Overrides × health × pin: where the request goes first, and whom it
    /// was meant for (a request moved by an override is no failover).
    #[test]
    fn overrides_fold_in_like_health() {
        use Standing::*;
        let c = config(&[("AFFINITY", "cookie")]);
        let pin_a = format!("__tf_affinity={}", affinity::cookie_value(&c.origins, 0));
        let up = |_: usize| true;
        let table: &[(&[Standing], Option<&str>, usize, usize)] = &[
            (&[Auto, Auto, Auto], None, 0, 0),
            (&[Held, Auto, Auto], None, 1, 1),
            (&[Draining, Auto, Auto], None, 1, 1),
            // Pinned to a draining origin: it keeps the client.
            (&[Draining, Auto, Auto], Some(&pin_a), 0, 0),
            // Pinned to a held one: served elsewhere, the pin was not honoured.
            (&[Held, Auto, Auto], Some(&pin_a), 1, 0),
            (&[Held, Held, Auto], None, 2, 2),
        ];
        for (standing, cookie, first, intended) in table {
            let r = route(c.site(), up, standing, None, cookie.map(|s| s as &str), 0.5);
            assert_eq!(
                (r.order[0], r.intended),
                (*first, *intended),
                "{standing:?} {cookie:?}"
            );
        }
        // Forced up beats a down verdict; it is not preferred over a healthy primary.
        let r = route(
            c.site(),
            |i| i == 0,
            &[Auto, ForcedUp, Auto],
            None,
            None,
            0.5,
        );
        assert_eq!(r.order[..2], [0, 1]);
        let r = route(
            c.site(),
            |i| i != 0,
            &[ForcedUp, Auto, Auto],
            None,
            None,
            0.5,
        );
        assert_eq!((r.order[0], r.intended), (0, 0));
        // Everything held: the policy's order, meant for the primary.
        let r = route(c.site(), up, &[Held, Held, Held], None, None, 0.5);
        assert_eq!((r.order.clone(), r.intended), (vec![0, 1, 2], 0));
    }
}
