//! The operator's maintenance flag: while it is set the node never starts its
//! connector by itself, and a running connector is stopped so that the peer
//! takes over. The procedure is "on, work, off"; after "off" the primary's
//! fail-back clock brings the tunnel back within about two fail-back periods.

/// The flag as the node last read it, and when it last flipped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Maintenance {
    on: bool,
    since_ms: Option<u64>,
}

impl Maintenance {
    /// Returns true when the flag changed.
    pub fn set(&mut self, now_ms: u64, on: bool) -> bool {
        if self.on == on {
            return false;
        }
        self.on = on;
        self.since_ms = Some(now_ms);
        true
    }

    /// Whether the flag is set: while it is, the connector runs only on an
    /// operator's order.
    pub fn is_on(&self) -> bool {
        self.on
    }

    /// When the flag last changed, if it ever did.
    pub fn since_ms(&self) -> Option<u64> {
        self.since_ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_changes_only() {
        let mut m = Maintenance::default();
        assert!(!m.set(5, false));
        assert!(m.set(10, true));
        assert!(!m.set(20, true));
        assert_eq!(m.since_ms(), Some(10));
        assert!(m.set(30, false));
        assert!(!m.is_on());
    }
}
