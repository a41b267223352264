//! How producers choose a message's key (`[queue] key-distribution`, seed O6).
//!
//! | setting | key `k<i>` of `keys` keys is drawn with probability |
//! |---|---|
//! | `uniform` (default) | `1 / keys` |
//! | `zipf:S` | `(1 / (i + 1)^S) / H(keys, S)`: `k0` hottest, `k1` next, ... |
//! | `hot:SHARE` | `k0`: `SHARE`; every other key `(1 - SHARE) / (keys - 1)` |
//!
//! The draws come from the producer's seeded [`Rng`], so the same seed gives the
//! same keys; `uniform` draws exactly as before the setting existed.
use gauntlet_history::rng::Rng;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// A key distribution: which keys the producers' sends go to, and how often.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum KeyDistribution {
    /// Every key equally often.
    #[default]
    Uniform,
    /// Zipf's law with this exponent (> 0): key `k<i>` in proportion to `1/(i+1)^s`.
    Zipf(f64),
    /// One hot key, `k0`, takes this share (0 < share <= 1) of the sends; the others
    /// share the rest equally.
    Hot(f64),
}

/// A distribution that cannot be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("key distribution `{text}`: {why} (expected uniform, zipf:S with S > 0, or hot:SHARE with 0 < SHARE <= 1)")]
pub struct BadDistribution {
    /// What was given.
    pub text: String,
    /// What is wrong with it.
    pub why: String,
}

impl FromStr for KeyDistribution {
    type Err = BadDistribution;
    fn from_str(s: &str) -> Result<Self, BadDistribution> {
        let bad = |why: &str| BadDistribution {
            text: s.to_string(),
            why: why.to_string(),
        };
        let t = s.trim();
        if t == "uniform" {
            return Ok(KeyDistribution::Uniform);
        }
        let (name, arg) = t
            .split_once(':')
            .ok_or_else(|| bad("unknown distribution"))?;
        let x: f64 = arg
            .trim()
            .parse()
            .map_err(|_| bad("its parameter is not a number"))?;
        match name.trim() {
            "zipf" if x.is_finite() && x > 0.0 => Ok(KeyDistribution::Zipf(x)),
            "zipf" => Err(bad("the exponent must be a finite number above 0")),
            "hot" if x > 0.0 && x <= 1.0 => Ok(KeyDistribution::Hot(x)),
            "hot" => Err(bad("the hot key's share must be above 0 and at most 1")),
            _ => Err(bad("unknown distribution")),
        }
    }
}

impl fmt::Display for KeyDistribution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyDistribution::Uniform => f.write_str("uniform"),
            KeyDistribution::Zipf(s) => write!(f, "zipf:{s}"),
            KeyDistribution::Hot(share) => write!(f, "hot:{share}"),
        }
    }
}

impl Serialize for KeyDistribution {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for KeyDistribution {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// Draws key indices `0..keys` from a [`KeyDistribution`].
#[derive(Debug, Clone)]
pub struct KeyPicker {
    keys: u64,
    how: Pick,
}

#[derive(Debug, Clone)]
enum Pick {
    Uniform,
    /// The cumulative probability of keys `0..=i`, the last one 1.
    Cdf(Vec<f64>),
    Hot(f64),
}

impl KeyPicker {
    /// A picker over `keys` keys (at least one).
    pub fn new(dist: KeyDistribution, keys: usize) -> KeyPicker {
        let keys = keys.max(1);
        let how = match dist {
            KeyDistribution::Uniform => Pick::Uniform,
            KeyDistribution::Hot(share) => Pick::Hot(share),
            KeyDistribution::Zipf(s) => {
                let weights: Vec<f64> = (1..=keys).map(|i| (i as f64).powf(-s)).collect();
                let total: f64 = weights.iter().sum();
                let mut acc = 0.0;
                let mut cdf: Vec<f64> = weights
                    .iter()
                    .map(|w| {
                        acc += w / total;
                        acc
                    })
                    .collect();
                if let Some(last) = cdf.last_mut() {
                    *last = 1.0;
                }
                Pick::Cdf(cdf)
            }
        };
        KeyPicker {
            keys: keys as u64,
            how,
        }
    }

    /// The next key's index.
    pub fn pick(&self, rng: &mut Rng) -> u64 {
        match &self.how {
            Pick::Uniform => rng.below(self.keys),
            Pick::Hot(share) => {
                if self.keys == 1 || rng.chance(*share) {
                    0
                } else {
                    1 + rng.below(self.keys - 1)
                }
            }
            Pick::Cdf(cdf) => {
                let u = ((rng.next_u64() >> 11) as f64) * (1.0 / (1u64 << 53) as f64);
                cdf.partition_point(|&c| c <= u).min(cdf.len() - 1) as u64
            }
        }
    }

    /// The next key's name (`k<i>`).
    pub fn key(&self, rng: &mut Rng) -> String {
        format!("k{}", self.pick(rng))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shares(dist: KeyDistribution, keys: usize, n: usize) -> Vec<f64> {
        let p = KeyPicker::new(dist, keys);
        let mut rng = Rng::new(7);
        let mut counts = vec![0usize; keys];
        for _ in 0..n {
            counts[p.pick(&mut rng) as usize] += 1;
        }
        counts.iter().map(|&c| c as f64 / n as f64).collect()
    }

    #[test]
    fn parse_and_print() {
        for (text, d) in [
            ("uniform", KeyDistribution::Uniform),
            ("zipf:1.2", KeyDistribution::Zipf(1.2)),
            ("hot:0.9", KeyDistribution::Hot(0.9)),
            (" hot: 1 ", KeyDistribution::Hot(1.0)),
        ] {
            assert_eq!(text.parse::<KeyDistribution>(), Ok(d), "{text}");
            assert_eq!(d.to_string().parse::<KeyDistribution>(), Ok(d));
        }
        for bad in [
            "zipf", "zipf:0", "zipf:-1", "zipf:inf", "hot:0", "hot:1.5", "hot:x", "pareto:1",
        ] {
            let e = bad.parse::<KeyDistribution>().expect_err(bad);
            assert!(e.to_string().contains(bad.trim()), "{e}");
        }
    }

    #[test]
    fn uniform_draws_as_before_the_setting() {
        // Runs recorded before `key-distribution` existed drew `rng.below(keys)`.
        let p = KeyPicker::new(KeyDistribution::Uniform, 8);
        let (mut a, mut b) = (Rng::new(3), Rng::new(3));
        for _ in 0..100 {
            assert_eq!(p.pick(&mut a), b.below(8));
        }
    }

    #[test]
    fn hot_key_takes_its_share() {
        let s = shares(KeyDistribution::Hot(0.9), 8, 100_000);
        assert!((s[0] - 0.9).abs() < 0.01, "{s:?}");
        for share in &s[1..] {
            assert!((share - 0.1 / 7.0).abs() < 0.005, "{s:?}");
        }
        assert_eq!(shares(KeyDistribution::Hot(0.5), 1, 100), vec![1.0]);
    }

    #[test]
    fn zipf_follows_the_law() {
        let s = shares(KeyDistribution::Zipf(1.0), 4, 200_000);
        // 1, 1/2, 1/3, 1/4 over H = 25/12.
        let want = [12.0 / 25.0, 6.0 / 25.0, 4.0 / 25.0, 3.0 / 25.0];
        for (got, want) in s.iter().zip(want) {
            assert!((got - want).abs() < 0.01, "{s:?}");
        }
        // Hottest first, every key drawn.
        assert!(s.windows(2).all(|w| w[0] > w[1]), "{s:?}");
    }

    #[test]
    fn serde_round_trip() {
        #[derive(Serialize, Deserialize, PartialEq, Debug)]
        struct T {
            d: KeyDistribution,
        }
        let t = T {
            d: KeyDistribution::Zipf(1.5),
        };
        let s = serde_json::to_string(&t).expect("serializes");
        assert_eq!(s, r#"{"d":"zipf:1.5"}"#);
        assert_eq!(serde_json::from_str::<T>(&s).expect("reads"), t);
        assert!(serde_json::from_str::<T>(r#"{"d":"hot:2"}"#).is_err());
    }
}
