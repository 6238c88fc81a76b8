//! The one seeded pseudo-random generator of the tests, the benches and the unit tests (std
//! only, no `rand`): the same seed gives the same data on every machine, so a failure replays.
//! Include it with `#[path = "support/rng.rs"] mod rng;` (benches: `"../tests/support/rng.rs"`;
//! the unit tests reach it as `crate::testing::rng`).
//!
//! Two generators, kept apart because the data each test was written against comes from one of
//! them: [`Rng`], Marsaglia's xorshift64 (shifts 13, 7, 17), and [`RngStar`], Vigna's
//! xorshift64* (shifts 12, 25, 27 and a multiply: better low bits). Neither state may be 0: a
//! seed is made odd by `new`.
// Each crate that includes it uses only part of it: the rest would warn there.
#![allow(dead_code)]

/// xorshift64 (13, 7, 17).
#[derive(Clone, Debug)]
pub struct Rng(pub u64);

/// xorshift64* (12, 25, 27, times `0x2545_F491_4F6C_DD1D`).
#[derive(Clone, Debug)]
pub struct RngStar(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

impl RngStar {
    /// A generator from the SplitMix64 of `seed`, so that nearby seeds give unrelated streams.
    pub fn mixed(seed: u64) -> RngStar {
        let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        RngStar((z ^ (z >> 31)) | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

/// What both generators draw, from their `next`.
macro_rules! draws {
    ($t:ident) => {
        impl $t {
            /// A generator whose state is `seed` made odd (never 0).
            pub fn new(seed: u64) -> $t {
                $t(seed | 1)
            }
            /// 0..n; 0, drawing nothing, when n is 0.
            pub fn below(&mut self, n: usize) -> usize {
                if n == 0 {
                    0
                } else {
                    (self.next() % n as u64) as usize
                }
            }
            /// 0..n as a `u64`; 0, drawing nothing, when n is 0.
            pub fn below_u64(&mut self, n: u64) -> u64 {
                if n == 0 {
                    0
                } else {
                    self.next() % n
                }
            }
            /// Below `n`, low values more often.
            pub fn skewed(&mut self, n: usize) -> usize {
                let m = self.below(n) + 1;
                self.below(m)
            }
            /// Uniform in [0, 1), from the top 53 bits.
            pub fn unit(&mut self) -> f64 {
                (self.next() >> 11) as f64 / (1u64 << 53) as f64
            }
            /// True one time in `one_in`.
            pub fn chance(&mut self, one_in: usize) -> bool {
                self.below(one_in) == 0
            }
            /// A random element of a non-empty `from`.
            pub fn pick<'a, T>(&mut self, from: &'a [T]) -> &'a T {
                &from[self.below(from.len())]
            }
            /// `lens.start..lens.end` bytes drawn from `alphabet`.
            pub fn bytes(&mut self, lens: std::ops::Range<usize>, alphabet: &[u8]) -> Vec<u8> {
                let len = lens.start + self.below(lens.end - lens.start);
                (0..len).map(|_| *self.pick(alphabet)).collect()
            }
        }
    };
}

draws!(Rng);
draws!(RngStar);
