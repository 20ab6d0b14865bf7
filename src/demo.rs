//! The built-in demo workload run by `hotspot demo`: a known, phased call graph on two
//! threads, so a first profile on an idle machine shows a real shape.
//!
//! Main thread, cycling every [`CYCLE`] (2 s) through three phases with uneven shares:
//!
//! ```text
//! demo_parse     50%  ─┬─ demo_tokenise    ── demo_scan_words   (byte scanning)
//!                      └─ demo_hash_tokens ── demo_fnv_mix      (hashing)
//! demo_render    30%  ──── demo_shade_rows  ── demo_shade_pixel  (float-heavy)
//! demo_compress  20%  ──── demo_find_runs   ── demo_shuffle_block (byte shuffling)
//! ```
//!
//! Thread `demo-worker`: `demo_background` ── `demo_background_tick` ── `demo_checksum`,
//! busy about half the time (5 ms of work, 5 ms asleep), so it shows as steady
//! background load next to the main thread.
//!
//! Every function is `#[inline(never)]` and feeds its inputs and results through
//! [`black_box`], so each keeps its own frame and no work is optimised away; the
//! workspace builds with frame pointers, so the stacks walk.

use std::hint::black_box;
use std::thread;
use std::time::{Duration, Instant};

/// Length of one parse → render → compress cycle on the main thread.
pub const CYCLE: Duration = Duration::from_secs(2);

/// Shares of [`CYCLE`] per phase, in percent: parse, render, compress.
const SHARES: [u32; 3] = [50, 30, 20];

/// Busy and idle time per round of the background thread.
const BACKGROUND_BUSY: Duration = Duration::from_millis(5);
const BACKGROUND_IDLE: Duration = Duration::from_millis(5);

/// Runs the demo workload for `duration` (wall time), then returns.
pub fn run(duration: Duration) {
    // `None` when `duration` is too large to add: run until the process is stopped.
    let deadline = Instant::now().checked_add(duration);
    let worker = thread::Builder::new()
        .name("demo-worker".to_owned())
        .spawn(move || demo_background(deadline))
        .expect("cannot spawn the demo-worker thread");
    demo_main(deadline);
    if let Err(panic) = worker.join() {
        std::panic::resume_unwind(panic);
    }
}

fn expired(deadline: Option<Instant>) -> bool {
    deadline.is_some_and(|d| Instant::now() >= d)
}

/// The earlier of `deadline` and `now + span`.
fn phase_end(deadline: Option<Instant>, span: Duration) -> Instant {
    let now = Instant::now();
    let end = now.checked_add(span).unwrap_or(now);
    deadline.map_or(end, |d| d.min(end))
}

#[inline(never)]
fn demo_main(deadline: Option<Instant>) {
    let text = demo_make_text(16 * 1024);
    let mut image = vec![0f32; 64 * 64];
    let mut block = vec![0u8; 16 * 1024];
    let mut frame = 0u32;
    while !expired(deadline) {
        let [parse, render, compress] = SHARES.map(|pct| CYCLE * pct / 100);
        demo_parse(&text, phase_end(deadline, parse));
        demo_render(&mut image, frame, phase_end(deadline, render));
        demo_compress(&mut block, phase_end(deadline, compress));
        frame = frame.wrapping_add(1);
    }
    black_box((&image, &block));
}

/// Pseudo-text: lowercase words of 1-10 letters separated by spaces.
#[inline(never)]
fn demo_make_text(len: usize) -> Vec<u8> {
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut text = Vec::with_capacity(len);
    while text.len() < len {
        let word = 1 + next() % 10;
        for _ in 0..word {
            text.push(b'a' + (next() % 26) as u8);
        }
        text.push(b' ');
    }
    text.truncate(len);
    text
}

// ---- phase 1: parse (50%) ----

#[inline(never)]
fn demo_parse(text: &[u8], until: Instant) {
    let mut acc = 0u64;
    while Instant::now() < until {
        // Tokenising is ~60% of the phase, hashing ~40% (hashing runs on 2 of 3 rounds,
        // each about as costly as a tokenise round).
        acc = acc.wrapping_add(demo_tokenise(black_box(text)) as u64);
        acc ^= demo_tokenise(black_box(text)) as u64;
        acc = acc.wrapping_add(demo_hash_tokens(black_box(text)));
    }
    black_box(acc);
}

#[inline(never)]
fn demo_tokenise(text: &[u8]) -> usize {
    black_box(demo_scan_words(black_box(text)))
}

/// Counts words and letters (a small state machine over bytes).
#[inline(never)]
fn demo_scan_words(text: &[u8]) -> usize {
    let mut words = 0usize;
    let mut letters = 0usize;
    let mut in_word = false;
    for &b in text {
        let letter = black_box(b).is_ascii_lowercase();
        if letter {
            letters += 1;
            if !in_word {
                words += 1;
            }
        }
        in_word = letter;
    }
    words.wrapping_mul(31).wrapping_add(letters)
}

#[inline(never)]
fn demo_hash_tokens(text: &[u8]) -> u64 {
    black_box(demo_fnv_mix(black_box(text)))
}

/// FNV-1a of each word, folded together.
#[inline(never)]
fn demo_fnv_mix(text: &[u8]) -> u64 {
    let mut folded = 0u64;
    for word in text.split(|&b| b == b' ') {
        let mut h = 0xcbf2_9ce4_8422_2325u64;
        for &b in word {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        folded = folded.rotate_left(5) ^ h;
    }
    folded
}

// ---- phase 2: render (30%) ----

#[inline(never)]
fn demo_render(image: &mut [f32], frame: u32, until: Instant) {
    let mut t = frame as f32 * 0.01;
    while Instant::now() < until {
        demo_shade_rows(black_box(&mut *image), 64, t);
        t += 0.001;
    }
    black_box(image);
}

#[inline(never)]
fn demo_shade_rows(image: &mut [f32], width: usize, t: f32) {
    for (row, pixels) in image.chunks_mut(width).enumerate() {
        let y = row as f32 / width as f32 * 2.4 - 1.2;
        for (col, px) in pixels.iter_mut().enumerate() {
            let x = col as f32 / width as f32 * 3.0 - 2.1;
            *px = demo_shade_pixel(black_box(x + t * 0.1), y);
        }
    }
}

/// Escape-time iteration of z² + c: a float-only inner loop (no libm calls).
#[inline(never)]
fn demo_shade_pixel(cx: f32, cy: f32) -> f32 {
    let (mut zx, mut zy) = (0f32, 0f32);
    let mut i = 0u32;
    while i < 48 && zx * zx + zy * zy < 4.0 {
        let nx = zx * zx - zy * zy + cx;
        zy = 2.0 * zx * zy + cy;
        zx = nx;
        i += 1;
    }
    i as f32 + zx * 0.001
}

// ---- phase 3: compress (20%) ----

#[inline(never)]
fn demo_compress(block: &mut [u8], until: Instant) {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut runs = 0usize;
    while Instant::now() < until {
        runs = runs.wrapping_add(demo_find_runs(black_box(&mut *block), seed));
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
    }
    black_box(runs);
}

#[inline(never)]
fn demo_find_runs(block: &mut [u8], seed: u64) -> usize {
    demo_shuffle_block(block, seed);
    // Count runs of equal bytes in the shuffled block.
    1 + block.windows(2).filter(|w| w[0] != w[1]).count()
}

/// Swaps, rotates and xors bytes at pseudo-random positions.
#[inline(never)]
fn demo_shuffle_block(block: &mut [u8], seed: u64) {
    let len = block.len();
    if len == 0 {
        return;
    }
    let mut s = seed | 1;
    for i in 0..len {
        s ^= s << 7;
        s ^= s >> 9;
        let j = (s as usize) % len;
        block.swap(i, j);
        block[i] = block[i].rotate_left(3) ^ (s as u8);
    }
}

// ---- thread demo-worker: steady background work ----

#[inline(never)]
fn demo_background(deadline: Option<Instant>) {
    let mut data: Vec<u8> = (0..64 * 1024).map(|i| (i * 7 + 3) as u8).collect();
    let mut acc = 0u32;
    while !expired(deadline) {
        acc ^= demo_background_tick(&mut data, phase_end(deadline, BACKGROUND_BUSY));
        let nap = deadline.map_or(BACKGROUND_IDLE, |d| {
            BACKGROUND_IDLE.min(d.saturating_duration_since(Instant::now()))
        });
        thread::sleep(nap);
    }
    black_box(acc);
}

#[inline(never)]
fn demo_background_tick(data: &mut [u8], until: Instant) -> u32 {
    let mut acc = 0u32;
    while Instant::now() < until {
        acc = acc.wrapping_add(demo_checksum(black_box(&*data)));
        if let Some(b) = data.first_mut() {
            *b = b.wrapping_add(1);
        }
    }
    acc
}

/// Adler-32 style checksum.
#[inline(never)]
fn demo_checksum(data: &[u8]) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    for &byte in data {
        a = (a + u32::from(byte)) % 65_521;
        b = (b + a) % 65_521;
    }
    (b << 16) | a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_for_about_the_requested_time() {
        let start = Instant::now();
        run(Duration::from_millis(300));
        let took = start.elapsed();
        assert!(took >= Duration::from_millis(300), "{took:?}");
        assert!(took < Duration::from_secs(5), "{took:?}");
    }

    #[test]
    fn helpers_do_work() {
        let text = demo_make_text(1000);
        assert_eq!(text.len(), 1000);
        assert!(demo_scan_words(&text) > 0);
        assert_ne!(demo_fnv_mix(&text), 0);
        assert!(
            demo_shade_pixel(0.0, 0.0) >= 48.0,
            "origin is inside the set"
        );
        assert!(
            demo_shade_pixel(2.0, 2.0) < 2.0,
            "far point escapes at once"
        );
        let mut block = vec![1u8; 64];
        demo_shuffle_block(&mut block, 42);
        assert!(block.iter().any(|&b| b != 1));
        assert_ne!(demo_checksum(&text), 0);
    }
}
