//! Citation helpers shared by normalization and consensus: sorting and merging sequence
//! ranges, and checking that a citation points at something in the judge package. Pure.

use std::collections::BTreeSet;

use crate::doc::{JudgePackage, SequenceRef, Stream};

/// Sorts ranges and merges overlapping or adjacent ones in the same stream. Malformed ranges
/// (`from > to`) are kept as they are, so that consensus can see and reject them.
pub fn merge_ranges(refs: &[SequenceRef]) -> Vec<SequenceRef> {
    let mut sorted: Vec<SequenceRef> = refs.to_vec();
    sorted.sort();
    sorted.dedup();
    let mut out: Vec<SequenceRef> = Vec::with_capacity(sorted.len());
    for r in sorted {
        if r.from > r.to {
            out.push(r);
            continue;
        }
        match out.last_mut() {
            Some(last)
                if last.stream == r.stream
                    && last.from <= last.to
                    && r.from <= last.to.saturating_add(1) =>
            {
                last.to = last.to.max(r.to);
            }
            _ => out.push(r),
        }
    }
    out
}

/// Sorted, de-duplicated frame hashes.
pub fn sort_hashes(hashes: &[String]) -> Vec<String> {
    let set: BTreeSet<&String> = hashes.iter().collect();
    set.into_iter().cloned().collect()
}

/// What exists in a judge package, for checking citations.
pub struct PackageIndex {
    event_seqs: BTreeSet<u64>,
    action_count: u64,
    frame_hashes: BTreeSet<String>,
}

impl PackageIndex {
    pub fn new(p: &JudgePackage) -> PackageIndex {
        PackageIndex {
            event_seqs: p.events.iter().map(|e| e.seq).collect(),
            action_count: p.actions.len() as u64,
            frame_hashes: p.frames.iter().map(|f| f.hash.to_string()).collect(),
        }
    }

    /// A range is in the package when it is well-formed and every sequence number in it
    /// exists in its stream.
    pub fn has_range(&self, r: &SequenceRef) -> bool {
        if r.from > r.to {
            return false;
        }
        match r.stream {
            Stream::Actions => r.to < self.action_count,
            Stream::Events => {
                let span = r.to - r.from + 1;
                self.event_seqs.range(r.from..=r.to).count() as u64 == span
            }
        }
    }

    pub fn has_frame(&self, h: &str) -> bool {
        self.frame_hashes.contains(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(stream: Stream, from: u64, to: u64) -> SequenceRef {
        SequenceRef { stream, from, to }
    }

    #[test]
    fn merges_overlapping_and_adjacent_per_stream() {
        let got = merge_ranges(&[
            r(Stream::Events, 5, 6),
            r(Stream::Events, 1, 2),
            r(Stream::Actions, 0, 0),
            r(Stream::Events, 3, 3),
            r(Stream::Events, 2, 2),
            r(Stream::Events, 9, 7),
        ]);
        assert_eq!(
            got,
            vec![
                r(Stream::Actions, 0, 0),
                r(Stream::Events, 1, 3),
                r(Stream::Events, 5, 6),
                r(Stream::Events, 9, 7)
            ]
        );
    }
}
