//! The hostile captures of `tests/hostile/mod.rs` through the read path in-process, the
//! way `view` reads them (the capture, the follower, every view drawn) and the way `info`,
//! `report` and `diff` do (every format): within 5 s of CPU each, under a 512 MB heap limit
//! enforced by this binary's allocator, with clean output (see `tests/read_path/mod.rs`),
//! and with the sample count each case must give.

#![allow(clippy::unwrap_used)]

use hotspot_testkit::hostile;
mod read_path;

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use hostile::Expect;
use hotspot_replay::Capture;
use hotspot_tui::State;
use hotspot_tui::model::Data;
use ratatui::layout::Rect;

const LIMIT: usize = 512 << 20;
/// What each command's work (`info`, one `report` format, `diff`, opening `view`) must
/// end within.
const STEP: Duration = Duration::from_secs(5);
/// What a whole case (every command) must end within, however it hangs.
const DEADLINE: Duration = Duration::from_secs(60);

/// The system allocator, refusing to hold more than [`LIMIT`] bytes at once (the process
/// then aborts, naming the case being read).
struct Limited;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
/// Live bytes when the current case started (the cases themselves, the test harness).
static BASE: AtomicUsize = AtomicUsize::new(0);
/// The case being read, for the message when the limit is hit.
static CASE: Mutex<String> = Mutex::new(String::new());

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Limited {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        if live > BASE.load(Ordering::Relaxed) + LIMIT {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            let name = CASE.try_lock().map(|c| c.clone()).unwrap_or_default();
            let _ = writeln!(
                std::io::stderr(),
                "case {name}: allocating {} bytes would hold {live} bytes, over the limit",
                layout.size()
            );
            return std::ptr::null_mut();
        }
        PEAK.fetch_max(live, Ordering::Relaxed);
        // SAFETY: the caller's layout is passed on unchanged.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: allocated by `alloc` above with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Limited = Limited;

/// Tests of this binary one at a time, so that the heap limit is per case.
static SERIAL: Mutex<()> = Mutex::new(());

/// Runs `f` on a thread; fails if it does not finish within [`DEADLINE`].
fn within_deadline(name: &str, f: impl FnOnce() + Send + 'static) {
    let (tx, rx) = std::sync::mpsc::channel();
    let worker = std::thread::spawn(move || {
        f();
        let _ = tx.send(());
    });
    match rx.recv_timeout(DEADLINE) {
        Ok(()) => worker.join().unwrap(),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
            // The worker panicked: re-raise its panic here.
            if let Err(e) = worker.join() {
                std::panic::resume_unwind(e);
            }
        }
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            panic!("{name}: still reading after {DEADLINE:?}")
        }
    }
}

fn read_case(case: &hostile::Case) {
    *CASE.lock().unwrap() = case.name.clone();
    let bytes = case.bytes.clone();
    let expect = case.expect.clone();
    let name = case.name.clone();
    let base = LIVE.load(Ordering::Relaxed);
    BASE.store(base, Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    within_deadline(&case.name, move || {
        read_path::check_within(&bytes, read_path::Steps { limit: Some(STEP) });
        let capture = Capture::from_bytes(&bytes);
        match (&expect, capture) {
            (Expect::Error(text), Err(e)) => {
                assert!(e.to_string().contains(text), "{name}: {e}");
            }
            (Expect::Error(_), Ok(_)) => panic!("{name}: opened"),
            (Expect::Samples(n), Ok(c)) => {
                assert_eq!(c.samples.len() as u64, *n, "{name}");
                let mut state = State::new(
                    Data::new(c),
                    read_path::view_options(),
                    Rect::new(0, 0, 120, 40),
                );
                state.finished = true;
                state.refresh();
                assert_eq!(state.fold().map_or(0, |f| f.total), *n, "{name}: the views");
            }
            (Expect::Samples(_) | Expect::Opens, Err(e)) => panic!("{name}: {e}"),
            (Expect::Opens | Expect::Any, Ok(_)) | (Expect::Any, Err(_)) => {}
        }
    });
    let peak = PEAK.load(Ordering::Relaxed) - base;
    eprintln!("{}: peak heap {:.1} MB", case.name, peak as f64 / 1e6);
}

#[test]
fn hostile_captures_in_the_views_and_exporters() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let cases = hostile::cases();
    assert!(cases.len() >= 40, "{} cases", cases.len());
    for case in &cases {
        read_case(case);
    }
}

#[test]
fn truncations_in_the_views_and_exporters() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (bytes, ends) = hostile::written(5, 200);
    for cut in (0..=bytes.len())
        .step_by(97)
        .chain(ends.iter().map(|e| e.0 as usize))
    {
        let expect = if cut < 16 {
            Expect::Any
        } else {
            Expect::Samples(
                ends.iter()
                    .filter(|(end, _)| *end as usize <= cut)
                    .map(|(_, n)| *n)
                    .max()
                    .unwrap_or(0),
            )
        };
        read_case(&hostile::Case::new(
            format!("truncated-at-{cut}"),
            bytes[..cut].to_vec(),
            expect,
        ));
    }
}

#[test]
fn byte_flips_in_the_views_and_exporters() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (bytes, _) = hostile::written(3, 200);
    let mut rng = hostile::Rng(42);
    for i in 0..100 {
        let mut b = bytes.clone();
        for _ in 0..1 + rng.index(8) {
            let at = rng.index(b.len());
            b[at] ^= 1 << rng.index(8);
        }
        // The same flips behind repaired checksums reach the zstd decoder.
        read_case(&hostile::Case::new(
            format!("flipped-{i}"),
            b.clone(),
            Expect::Any,
        ));
        read_path::fix_checksums(&mut b);
        read_case(&hostile::Case::new(
            format!("flipped-fixed-{i}"),
            b,
            Expect::Any,
        ));
    }
}
