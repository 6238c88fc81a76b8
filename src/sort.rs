//! One sort for the whole program. std's `sort_unstable_by` is compiled again for every element
//! type and comparison it is called with (1 to 8 KB each: about 75 KB of the binary for this
//! crate's call sites); this one is compiled once, over positions through a trait object, and
//! each caller adds only its comparison and a swap (docs/measurements.md, "Where the binary's
//! bytes go").
//!
//! The algorithm is an introsort: quicksort on the median of three with a Hoare partition (runs
//! of equal elements split evenly), insertion sort below `SMALL` elements, and heapsort once
//! the partitions have gone `depth` levels deep, so the worst case stays `O(n log n)`. It
//! recurses on the smaller side only, so its stack is at most that depth. Not stable: callers
//! whose order has ties that matter break them in the comparison. No allocation, no panics.

use core::cmp::Ordering;

/// Partitions at most this long are finished by insertion sort.
const SMALL: usize = 16;

/// Sorts `v` so that no element is `less` than one before it.
pub fn sort_by<T, F: FnMut(&T, &T) -> bool>(v: &mut [T], less: F) {
    run(&mut By { v, less });
}

/// Sorts `v` by `cmp` (as `slice::sort_unstable_by`).
pub fn sort_by_cmp<T, F: FnMut(&T, &T) -> Ordering>(v: &mut [T], mut cmp: F) {
    sort_by(v, |a, b| cmp(a, b) == Ordering::Less);
}

/// Sorts `v` by the key `key` gives each element (as `slice::sort_unstable_by_key`).
pub fn sort_by_key<T, K: Ord, F: FnMut(&T) -> K>(v: &mut [T], mut key: F) {
    sort_by(v, |a, b| key(a) < key(b));
}

/// Sorts `v` in its natural order (as `slice::sort_unstable`).
pub fn sort<T: Ord>(v: &mut [T]) {
    sort_by(v, |a, b| a < b);
}

/// What the shared code sees of a slice: its length, a comparison and a swap, by position.
trait Seq {
    fn len(&self) -> usize;
    /// Whether the element at `i` goes before the one at `j`.
    fn less(&mut self, i: usize, j: usize) -> bool;
    fn swap(&mut self, i: usize, j: usize);
}

struct By<'a, T, F> {
    v: &'a mut [T],
    less: F,
}

impl<T, F: FnMut(&T, &T) -> bool> Seq for By<'_, T, F> {
    fn len(&self) -> usize {
        self.v.len()
    }

    fn less(&mut self, i: usize, j: usize) -> bool {
        match (self.v.get(i), self.v.get(j)) {
            (Some(a), Some(b)) => (self.less)(a, b),
            _ => false,
        }
    }

    fn swap(&mut self, i: usize, j: usize) {
        if i < self.v.len() && j < self.v.len() {
            self.v.swap(i, j);
        }
    }
}

/// How many levels of partitions before heapsort takes over: twice `log2(n)`.
fn depth(n: usize) -> u32 {
    2 * (usize::BITS - n.leading_zeros())
}

// Out of line, so that it is compiled once, not into each caller.
#[inline(never)]
fn run(s: &mut dyn Seq) {
    let n = s.len();
    quick(s, 0, n, depth(n));
}

/// Sorts positions `lo..hi`.
fn quick(s: &mut dyn Seq, mut lo: usize, mut hi: usize, mut budget: u32) {
    loop {
        if hi - lo <= SMALL {
            insertion(s, lo, hi);
            return;
        }
        if budget == 0 {
            heap(s, lo, hi);
            return;
        }
        budget -= 1;
        let p = partition(s, lo, hi);
        if p - lo < hi - p {
            quick(s, lo, p, budget);
            lo = p + 1;
        } else {
            quick(s, p + 1, hi, budget);
            hi = p;
        }
    }
}

/// Partitions `lo..hi` (more than `SMALL` long) around the median of three elements and
/// returns where that pivot ends: nothing before it is greater, nothing after it is less.
fn partition(s: &mut dyn Seq, lo: usize, hi: usize) -> usize {
    let (a, b, c) = (lo + 1, lo + (hi - lo) / 2, hi - 1);
    if s.less(b, a) {
        s.swap(a, b);
    }
    if s.less(c, b) {
        s.swap(b, c);
        if s.less(b, a) {
            s.swap(a, b);
        }
    }
    s.swap(lo, b);
    // The pivot is at `lo`; `lo+1..i` holds none greater, `j+1..hi` none less. Both scans stop
    // at an element equal to the pivot, so equal elements end up on both sides.
    let (mut i, mut j) = (lo + 1, hi - 1);
    loop {
        while i <= j && s.less(i, lo) {
            i += 1;
        }
        while i <= j && s.less(lo, j) {
            j -= 1;
        }
        if i >= j {
            break;
        }
        s.swap(i, j);
        i += 1;
        j -= 1;
    }
    s.swap(lo, j);
    j
}

/// Sorts positions `lo..hi` by insertion (stable, for short runs).
fn insertion(s: &mut dyn Seq, lo: usize, hi: usize) {
    for i in lo + 1..hi {
        let mut j = i;
        while j > lo && s.less(j, j - 1) {
            s.swap(j, j - 1);
            j -= 1;
        }
    }
}

/// Sorts positions `lo..hi` by heapsort (the worst-case guard).
fn heap(s: &mut dyn Seq, lo: usize, hi: usize) {
    let n = hi - lo;
    for root in (0..n / 2).rev() {
        sift(s, lo, root, n);
    }
    for end in (1..n).rev() {
        s.swap(lo, lo + end);
        sift(s, lo, 0, end);
    }
}

/// Moves the element at heap position `root` down a max-heap of `n` elements based at `lo`.
fn sift(s: &mut dyn Seq, lo: usize, mut root: usize, n: usize) {
    loop {
        let mut child = 2 * root + 1;
        if child >= n {
            return;
        }
        if child + 1 < n && s.less(lo + child, lo + child + 1) {
            child += 1;
        }
        if !s.less(lo + root, lo + child) {
            return;
        }
        s.swap(lo + root, lo + child);
        root = child;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn sorts_short_long_and_equal_runs() {
        for n in [0usize, 1, 2, 3, 15, 16, 17, 33, 100, 1000] {
            let mut v: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(2_654_435_761) % 97).collect();
            let mut want = v.clone();
            want.sort_unstable();
            sort(&mut v);
            assert_eq!(v, want, "n = {n}");
            let mut same = vec![7u8; n];
            sort(&mut same);
            assert!(same.iter().all(|&x| x == 7));
        }
    }

    #[test]
    fn heapsort_takes_over_when_partitions_go_deep() {
        // A budget of 0 sends every partition longer than SMALL to heapsort.
        let mut v: Vec<i64> = (0..500).map(|i| (i * 7919) % 503 - 250).collect();
        let mut want = v.clone();
        want.sort_unstable();
        let n = v.len();
        quick(&mut By { v: &mut v, less: |a: &i64, b: &i64| a < b }, 0, n, 0);
        assert_eq!(v, want);
    }

    #[test]
    fn keys_and_comparisons() {
        let mut v = vec![(3, 'a'), (1, 'b'), (2, 'c'), (1, 'a')];
        sort_by_key(&mut v, |x| (x.0, x.1));
        assert_eq!(v, [(1, 'a'), (1, 'b'), (2, 'c'), (3, 'a')]);
        sort_by_cmp(&mut v, |a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        assert_eq!(v, [(3, 'a'), (2, 'c'), (1, 'a'), (1, 'b')]);
    }

    proptest! {
        #[test]
        fn agrees_with_std(mut v in proptest::collection::vec(0u16..64, 0..400)) {
            let mut want = v.clone();
            want.sort_unstable();
            sort(&mut v);
            prop_assert_eq!(v, want);
        }
    }
}
