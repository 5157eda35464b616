//! Arithmetic that Rust and JavaScript compute to the same bit.
//!
//! `f64::ln` and `Math.log` are each accurate to about an ulp, but neither
//! language promises *which* of two neighbouring doubles it returns, and the
//! JS fast path and the Rust full path must steer a key to the same origin.
//! IEEE 754 does promise `+ - * /` and comparisons: both languages round each
//! one to nearest-even on binary64, and neither fuses a multiply and an add
//! behind the programmer's back. So [`ln`] is written with those operations
//! alone, and `src/js/steer.mjs` repeats them in the same order; the shared
//! fixture `tests/fixtures/steering.json` pins the results.
//!
//! Change nothing here without changing `steer.mjs` the same way.

/// ln 2, √2 and √½, correctly rounded: the same doubles as JS's `Math.LN2`,
/// `Math.SQRT2` and `Math.SQRT1_2` (steer.mjs spells them out).
const LN2: f64 = std::f64::consts::LN_2;
const SQRT2: f64 = std::f64::consts::SQRT_2;
const SQRT1_2: f64 = std::f64::consts::FRAC_1_SQRT_2;

/// 2^k as a double, exactly (k within the normal range).
const fn pow2(k: i32) -> f64 {
    f64::from_bits(((1023 + k) as u64) << 52)
}

/// The binary steps of the range reduction, largest first.
const STEPS: [(f64, f64, f64); 8] = [
    (128.0, pow2(128), pow2(-128)),
    (64.0, pow2(64), pow2(-64)),
    (32.0, pow2(32), pow2(-32)),
    (16.0, pow2(16), pow2(-16)),
    (8.0, pow2(8), pow2(-8)),
    (4.0, pow2(4), pow2(-4)),
    (2.0, pow2(2), pow2(-2)),
    (1.0, pow2(1), pow2(-1)),
];
const TWO_256: f64 = pow2(256);
const TWO_NEG_256: f64 = pow2(-256);

/// Natural logarithm from `+ - * /` only, within a few ulps of `f64::ln`.
///
/// x = m·2^e with m in [√½, √2] (scaling by a power of two is exact, also
/// out of the subnormals), then ln m = 2·atanh(s), s = (m-1)/(m+1), by its
/// odd series through s^21 (|s| ≤ 0.1716, so the first term left out is
/// below 1e-18 of the sum). NaN for NaN or x < 0, -∞ for 0, ∞ for ∞.
pub fn ln(x: f64) -> f64 {
    if x.is_nan() || x < 0.0 {
        return f64::NAN;
    }
    if x == 0.0 {
        return f64::NEG_INFINITY;
    }
    if x == f64::INFINITY {
        return f64::INFINITY;
    }
    let mut m = x;
    let mut e = 0.0;
    while m >= TWO_256 {
        m *= TWO_NEG_256;
        e += 256.0;
    }
    while m < TWO_NEG_256 {
        m *= TWO_256;
        e -= 256.0;
    }
    for (k, up, down) in STEPS {
        if m >= up {
            m *= down;
            e += k;
        }
    }
    for (k, up, down) in STEPS {
        if m < down {
            m *= up;
            e -= k;
        }
    }
    // m is in [0.5, 2) now.
    if m > SQRT2 {
        m *= 0.5;
        e += 1.0;
    } else if m < SQRT1_2 {
        m *= 2.0;
        e -= 1.0;
    }
    let s = (m - 1.0) / (m + 1.0);
    let z = s * s;
    let mut p = 1.0 / 21.0;
    p = 1.0 / 19.0 + z * p;
    p = 1.0 / 17.0 + z * p;
    p = 1.0 / 15.0 + z * p;
    p = 1.0 / 13.0 + z * p;
    p = 1.0 / 11.0 + z * p;
    p = 1.0 / 9.0 + z * p;
    p = 1.0 / 7.0 + z * p;
    p = 1.0 / 5.0 + z * p;
    p = 1.0 / 3.0 + z * p;
    p = 1.0 + z * p;
    e * LN2 + 2.0 * s * p
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn close(x: f64) {
        let (got, want) = (ln(x), x.ln());
        let tolerance = 4.0 * f64::EPSILON * want.abs().max(f64::MIN_POSITIVE);
        assert!(
            (got - want).abs() <= tolerance,
            "ln({x:e}) = {got:e}, std says {want:e}"
        );
    }

    #[test]
    fn special_values() {
        assert!(ln(f64::NAN).is_nan());
        assert!(ln(-1.0).is_nan());
        assert!(ln(f64::NEG_INFINITY).is_nan());
        assert_eq!(ln(0.0), f64::NEG_INFINITY);
        assert_eq!(ln(-0.0), f64::NEG_INFINITY);
        assert_eq!(ln(f64::INFINITY), f64::INFINITY);
        assert_eq!(ln(1.0), 0.0);
        assert_eq!(ln(2.0), LN2);
        assert_eq!(ln(0.5), -LN2);
    }

    #[test]
    fn powers_of_two_scale_exactly() {
        assert_eq!(pow2(0), 1.0);
        assert_eq!(pow2(10), 1024.0);
        assert_eq!(pow2(-1), 0.5);
        for k in -1074..=1023 {
            let x = if k < -1022 {
                f64::from_bits(1u64 << (k + 1074))
            } else {
                pow2(k)
            };
            close(x);
        }
    }

    #[test]
    fn extremes() {
        for x in [
            f64::MIN_POSITIVE,
            f64::MIN_POSITIVE / 3.0,
            f64::from_bits(1),
            f64::MAX,
            1.0 - f64::EPSILON / 2.0,
            1.0 + f64::EPSILON,
            SQRT2,
            SQRT1_2,
            0.5 / 4294967296.0,
            (4294967295.0 + 0.5) / 4294967296.0,
        ] {
            close(x);
        }
        assert!(ln((4294967295.0 + 0.5) / 4294967296.0) < 0.0);
    }

    proptest! {
        /// Within 4 ulps of the platform's logarithm anywhere in range.
        #[test]
        fn agrees_with_std(bits in 1u64..0x7ff0_0000_0000_0000) {
            close(f64::from_bits(bits));
        }

        /// And where steering uses it: u = (h + ½)/2³² for a 32-bit hash h.
        #[test]
        fn agrees_on_hash_points(h in any::<u32>()) {
            close((f64::from(h) + 0.5) / 4294967296.0);
        }
    }
}
