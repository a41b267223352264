//! Reading on several threads gives what reading on one does: the same history,
//! the same error on the same line, the same warnings, the same verdict.
//! (A test of the history reader; it lives with the checkers for the verdicts.)
use gauntlet_checkers::{check, CheckOptions};
use gauntlet_history::{
    read_bytes_with, read_path_with, read_with, History, HistoryError, ReadOptions,
};
use gauntlet_testkit::queue_gen::{generate_vec, GenConfig, Injection, Mode};
use gauntlet_testkit::{mutate, Rng};
use std::path::Path;

const NAME: &str = "h.jsonl";

/// Everything a read gives, to compare: every field of the history, or the error.
fn outcome(r: Result<History, HistoryError>) -> String {
    match r {
        Ok(h) => format!("{h:?}"),
        Err(e) => format!("error at line {:?}: {e}", e.line()),
    }
}

fn one_thread(data: &[u8]) -> String {
    outcome(read_bytes_with(
        NAME,
        data,
        &ReadOptions::default().with_threads(1),
    ))
}

/// Reads `data` on 1 thread, then on 2 and 3 with chunks of many sizes, from
/// memory and as a stream; all must agree. Returns the outcome.
fn same_on_all_threads(data: &[u8]) -> String {
    let want = one_thread(data);
    for chunk in [1, 100, 4 << 10, 64 << 10, 1 << 20] {
        for threads in [2, 3] {
            let opts = ReadOptions::default()
                .with_threads(threads)
                .with_chunk_bytes(chunk);
            let got = outcome(read_bytes_with(NAME, data, &opts));
            assert_eq!(got, want, "{threads} threads, chunks of {chunk}");
            let got = outcome(read_with(Path::new(NAME), data, &opts));
            assert_eq!(got, want, "stream, {threads} threads, chunks of {chunk}");
        }
    }
    want
}

/// A history of some 600 kB: large enough for the reader to use threads.
fn generated(seed: u64) -> Vec<u8> {
    let data = generate_vec(&GenConfig {
        seed,
        ops: 4_000,
        mode: [Mode::Offsets, Mode::Ids, Mode::Bare][seed as usize % 3],
        injections: Injection::ALL.to_vec(),
        ..GenConfig::default()
    })
    .0;
    assert!(data.len() > 300 << 10, "{} bytes", data.len());
    data
}

/// `data` with each line changed by `f` (given the line's number from 0, with its newline).
fn map_lines(data: &[u8], mut f: impl FnMut(usize, &[u8]) -> Vec<u8>) -> Vec<u8> {
    data.split_inclusive(|&c| c == b'\n')
        .enumerate()
        .flat_map(|(i, l)| f(i, l))
        .collect()
}

#[test]
fn generated_histories_and_their_verdicts_are_the_same() {
    for seed in 0..3 {
        let data = generated(seed);
        let got = same_on_all_threads(&data);
        assert!(!got.starts_with("error"), "{got}");
        let verdict = |threads| {
            let opts = ReadOptions::default()
                .with_threads(threads)
                .with_chunk_bytes(1000);
            let h = read_bytes_with(NAME, &data, &opts).expect("reads");
            serde_json::to_string(&check(&h, &CheckOptions::default())).expect("serializes")
        };
        assert_eq!(verdict(1), verdict(2));
    }
}

#[test]
fn crlf_and_blank_lines() {
    let data = map_lines(&generated(3), |i, l| {
        let mut l = l.to_vec();
        if i % 2 == 0 {
            l.pop();
            l.extend_from_slice(b"\r\n");
        }
        if i % 5 == 0 {
            l.extend_from_slice(b"\n \t\r\n");
        }
        l
    });
    let got = same_on_all_threads(&data);
    assert!(!got.starts_with("error"), "{got}");
}

#[test]
fn a_bad_line_in_a_middle_chunk() {
    let data = generated(4);
    let lines = data.iter().filter(|&&c| c == b'\n').count();
    for bad_at in [lines / 3, lines / 2 + 1, lines - 2] {
        let bad = map_lines(&data, |i, l| {
            if i == bad_at {
                b"{\"index\":7,\"time\"\n".to_vec()
            } else {
                l.to_vec()
            }
        });
        let got = same_on_all_threads(&bad);
        let want = format!(
            "error at line {:?}: {NAME}:{}: ",
            Some(bad_at + 1),
            bad_at + 1
        );
        assert!(got.starts_with(&want), "{got}");
    }
    // A line that parses but breaks the contract (an index that goes back).
    let mut previous = Vec::new();
    let back = map_lines(&data, |i, l| {
        let out = if i == lines / 2 {
            previous.clone()
        } else {
            l.to_vec()
        };
        previous = l.to_vec();
        out
    });
    let got = same_on_all_threads(&back);
    assert!(
        got.contains("is not greater than the previous index"),
        "{got}"
    );
    // Mutated histories: whatever the one-thread reader says.
    let mut rng = Rng::new(3);
    for _ in 0..8 {
        same_on_all_threads(&mutate(&mut rng, &data));
    }
}

#[test]
fn a_cut_off_last_line_gives_the_same_warning() {
    let data = generated(5);
    let last_start = data[..data.len() - 1]
        .iter()
        .rposition(|&c| c == b'\n')
        .map_or(0, |p| p + 1);
    let cut = &data[..last_start + (data.len() - last_start) / 2];
    let got = same_on_all_threads(cut);
    assert!(
        got.contains("last line is cut off"),
        "{}",
        &got[got.len() - 300..]
    );
    // Not cut: a last line without newline that parses is read.
    let whole = &data[..data.len() - 1];
    assert_eq!(
        same_on_all_threads(whole),
        same_on_all_threads(&data),
        "a missing last newline changes nothing"
    );
}

#[test]
fn a_line_longer_than_a_chunk() {
    // White space after an op makes a valid line of 300 kB.
    let data = map_lines(&generated(6), |i, l| {
        let mut l = l.to_vec();
        if i == 100 {
            l.pop();
            l.extend_from_slice(&vec![b' '; 300 << 10]);
            l.push(b'\n');
        }
        l
    });
    let got = same_on_all_threads(&data);
    assert!(!got.starts_with("error"), "{got}");
}

#[test]
fn files_read_the_same_on_several_threads() {
    let dir = std::env::temp_dir().join(format!("gauntlet-parallel-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("h.jsonl");
    let data = generated(7);
    std::fs::write(&path, &data).expect("writes");
    let read = |threads, chunk| {
        let opts = ReadOptions::default()
            .with_threads(threads)
            .with_chunk_bytes(chunk);
        outcome(read_path_with(&path, &opts))
    };
    let want = read(1, 1 << 20);
    assert!(!want.starts_with("error"));
    for (threads, chunk) in [(2, 1000), (2, 64 << 10), (4, 5000)] {
        assert_eq!(
            read(threads, chunk),
            want,
            "{threads} threads, chunks of {chunk}"
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}
