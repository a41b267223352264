//! Counting an anomaly and keeping a capped list of its evidence.
use crate::verdict::{Anomaly, Example};
use std::collections::BTreeMap;

/// Findings of one anomaly type while a checker runs.
#[derive(Debug)]
pub(crate) struct Found {
    pub count: u64,
    pub examples: Vec<Example>,
    pub by_group: BTreeMap<String, u64>,
    pub by_place: BTreeMap<String, u64>,
    max: usize,
}

impl Found {
    pub fn new(max: usize) -> Self {
        Found {
            count: 0,
            examples: Vec::new(),
            by_group: BTreeMap::new(),
            by_place: BTreeMap::new(),
            max,
        }
    }

    /// Counts one; builds the example only while there is room for it.
    pub fn hit(&mut self, example: impl FnOnce() -> Example) {
        self.count += 1;
        self.example(example);
    }

    /// Keeps an example without counting (when the count is kept elsewhere).
    pub fn example(&mut self, example: impl FnOnce() -> Example) {
        if self.examples.len() < self.max {
            self.examples.push(example());
        }
    }

    pub fn wants_examples(&self) -> bool {
        self.examples.len() < self.max
    }

    pub fn group_hit(&mut self, group: &str) {
        *self.by_group.entry(group.to_string()).or_insert(0) += 1;
    }

    pub fn into_anomaly(self) -> Anomaly {
        Anomaly {
            count: self.count,
            examples: self.examples,
            by_group: self.by_group,
            by_place: self.by_place,
        }
    }
}
