//! A seeded random stream for the crate's simulations and statistical
//! tests, and for the inputs of the fixtures the JS twins are held to: the
//! same seed gives the same numbers on every machine, so a failing run
//! can be run again. splitmix64 (Steele, Lea and Flood, "Fast splittable
//! pseudorandom number generators", 2014): small, and good enough for
//! test inputs; no decision uses it (the Worker's randomness is
//! `Math.random`, passed in).
//!
//! Public only so the integration tests (`tests/`) share it with the unit
//! tests; nothing outside tests calls it.

/// The stream; `SplitMix64(seed)` starts it.
#[derive(Clone, Debug)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// The next number in [0, 1), uniform: the top 53 bits of
    /// [`SplitMix64::next_u64`] as a fraction (every f64 step there is).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The published splitmix64 outputs for seed 0 (the reference C code,
    /// which also seeds xoshiro's state): the stream every fixture was
    /// generated with.
    #[test]
    fn known_outputs() {
        let mut rng = SplitMix64(0);
        assert_eq!(rng.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(rng.next_u64(), 0x6e78_9e6a_a1b9_65f4);
        assert_eq!(rng.next_u64(), 0x06c4_5d18_8009_454f);
    }

    #[test]
    fn fractions_stay_below_one() {
        let mut rng = SplitMix64(u64::MAX);
        assert!((0..10_000)
            .map(|_| rng.next_f64())
            .all(|x| (0.0..1.0).contains(&x)));
    }
}
