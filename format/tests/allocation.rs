//! Hostile inputs must not make the reader allocate much: a zstd bomb, and small random files
//! dressed up as captures. A counting allocator measures the largest single allocation and
//! the peak of live bytes.

// Tests and tools: a failed unwrap is a test failure with a backtrace.
#![allow(clippy::unwrap_used)]

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use common::synthetic::Rng;
use hotspot_format::block::{BlockHeader, SYNC};
use hotspot_format::header::FileHeader;
use hotspot_format::*;

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static LARGEST: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(live, Ordering::Relaxed);
        LARGEST.fetch_max(layout.size(), Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// The tests in this file hold this for their whole run, so the counters are theirs.
static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Runs `f` and returns (largest single allocation, peak live bytes above the start).
fn measure(f: impl FnOnce()) -> (usize, usize) {
    let start = LIVE.load(Ordering::Relaxed);
    PEAK.store(start, Ordering::Relaxed);
    LARGEST.store(0, Ordering::Relaxed);
    f();
    (
        LARGEST.load(Ordering::Relaxed),
        PEAK.load(Ordering::Relaxed) - start,
    )
}

fn block_with(payload: &[u8], raw_len: u32) -> Vec<u8> {
    let mut out = BlockHeader {
        seq: 0,
        payload_len: payload.len() as u32,
        raw_len,
        payload_crc: crc32c::crc32c(payload),
    }
    .to_bytes()
    .to_vec();
    out.extend_from_slice(payload);
    out
}

#[test]
fn zstd_bomb_is_rejected_without_allocating_it() {
    let _serial = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    // 80 MiB of zeros (over the 64 MiB limit) in a few KB, declared as 1000 bytes, and as over the limit; once with
    // the size recorded in the frame, once without (then only the bounded output buffer
    // stops it).
    let sized = zstd::bulk::compress(&vec![0u8; 80 << 20], 19).unwrap();
    let mut no_size = Vec::with_capacity(1 << 20);
    {
        use zstd::zstd_safe::{CCtx, CParameter};
        let mut c = CCtx::create();
        c.set_parameter(CParameter::ContentSizeFlag(false)).unwrap();
        c.set_parameter(CParameter::CompressionLevel(19)).unwrap();
        c.compress2(&mut no_size, &vec![0u8; 80 << 20]).unwrap();
    }
    for (payload, raw_len) in [(&sized, 1000), (&sized, u32::MAX), (&no_size, 1000)] {
        assert!(payload.len() < 64 << 10);
        let mut data = FileHeader::default().to_bytes().to_vec();
        data.extend_from_slice(&block_with(payload, raw_len));
        let (largest, peak) = measure(|| {
            let events: Vec<Event> = Reader::new(&data).unwrap().collect();
            assert!(matches!(events[..], [Event::Corrupt { .. }]), "{events:?}");
        });
        assert!(largest < 1 << 20, "largest allocation {largest}");
        assert!(peak < 4 << 20, "peak {peak}");
    }
}

#[test]
fn small_hostile_files_stay_small() {
    let _serial = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let mut rng = Rng(7);
    let mut worst = (0, 0);
    for _ in 0..300 {
        // 10 KB of noise, sprinkled with sync markers followed by headers whose checksums
        // verify and whose lengths are random.
        let mut data = FileHeader::default().to_bytes().to_vec();
        while data.len() < 10_000 {
            match rng.below(4) {
                0 => data.extend_from_slice(&SYNC),
                1 => {
                    let payload: Vec<u8> =
                        (0..rng.below(64)).map(|_| rng.next_u64() as u8).collect();
                    data.extend_from_slice(&block_with(&payload, rng.next_u64() as u32));
                }
                _ => data.extend((0..rng.below(200)).map(|_| rng.next_u64() as u8)),
            }
        }
        let m = measure(|| {
            let n = Reader::new(&data).unwrap().count();
            assert!(n <= data.len());
            let mut f = Follower::new(std::io::Cursor::new(data.clone()));
            f.poll().unwrap();
        });
        worst = (worst.0.max(m.0), worst.1.max(m.1));
    }
    // The follower reads in 256 KiB chunks; the rest is small.
    assert!(worst.0 <= 1 << 20, "largest allocation {}", worst.0);
    assert!(worst.1 <= 4 << 20, "peak {}", worst.1);
}
