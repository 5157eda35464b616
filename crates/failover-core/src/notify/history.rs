//! A bounded history: the newest `cap` rows, oldest dropped first, read
//! newest first. The checker keeps its last 500 events in one, an isolate
//! its own last 20 health changes.

use std::collections::VecDeque;

/// The last `cap` rows pushed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct History<T> {
    cap: usize,
    rows: VecDeque<T>,
}

impl<T> History<T> {
    /// An empty history of at most `cap` rows (at least one).
    pub fn new(cap: usize) -> History<T> {
        History {
            cap: cap.max(1),
            rows: VecDeque::new(),
        }
    }

    /// Adds the newest row; returns the oldest when it no longer fits.
    pub fn push(&mut self, row: T) -> Option<T> {
        self.rows.push_back(row);
        if self.rows.len() > self.cap {
            return self.rows.pop_front();
        }
        None
    }

    /// At most `n` rows, newest first.
    pub fn newest(&self, n: usize) -> impl Iterator<Item = &T> {
        self.rows.iter().rev().take(n)
    }

    /// How many rows it holds.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// True when it holds none.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_newest_and_reads_them_newest_first() {
        let mut h = History::new(3);
        assert!(h.is_empty());
        assert_eq!(h.push(1), None);
        assert_eq!(h.push(2), None);
        assert_eq!(h.push(3), None);
        assert_eq!(h.push(4), Some(1), "the oldest goes");
        assert_eq!(h.len(), 3);
        assert_eq!(h.newest(2).copied().collect::<Vec<_>>(), [4, 3]);
        assert_eq!(h.newest(10).copied().collect::<Vec<_>>(), [4, 3, 2]);
        let mut one = History::new(0);
        one.push('a');
        assert_eq!(one.push('b'), Some('a'), "a cap of 0 is taken as 1");
    }
}
