//! Feeds arbitrary bytes to the reader, `read_all`, `find_index`, seeking and the follower,
//! draining each, and checks that the follower finds the same blocks as the reader however
//! the bytes arrive.
#![no_main]

use std::cell::RefCell;
use std::io::{Cursor, Read, Seek, SeekFrom};
use std::rc::Rc;

use hotspot_format::{Event, Follower, Reader, find_index, read_all};
use libfuzzer_sys::fuzz_target;

/// A file that grows between polls.
#[derive(Clone, Default)]
struct Growing {
    data: Rc<RefCell<Vec<u8>>>,
    pos: u64,
}

impl Read for Growing {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let data = self.data.borrow();
        let mut c = Cursor::new(&data[..]);
        c.set_position(self.pos);
        let n = c.read(buf)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl Seek for Growing {
    fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
        let len = self.data.borrow().len() as u64;
        self.pos = match pos {
            SeekFrom::Start(p) => p,
            SeekFrom::End(d) => len.saturating_add_signed(d),
            SeekFrom::Current(d) => self.pos.saturating_add_signed(d),
        };
        Ok(self.pos)
    }
}

fn blocks(events: Vec<Event>) -> Vec<Event> {
    events
        .into_iter()
        .filter(|e| matches!(e, Event::Block(_)))
        .collect()
}

fuzz_target!(|data: &[u8]| {
    let whole = Reader::new(data).ok().map(|r| blocks(r.collect()));
    let _ = read_all(data);
    let _ = find_index(data);
    if let Ok(mut reader) = Reader::new(data) {
        let t = (data.len() as u64).wrapping_mul(1_000_003);
        let _ = reader.seek_to_time(t);
        for _event in reader {}
    }
    let mut follower = Follower::new(Cursor::new(data.to_vec()));
    if let Ok(events) = follower.poll()
        && let Some(want) = &whole
    {
        assert_eq!(&blocks(events), want);
    }
    // The same bytes arriving in three installments.
    let a = data.first().map_or(0, |&b| b as usize * data.len() / 256);
    let b = data.last().map_or(0, |&b| a + b as usize * (data.len() - a) / 256);
    let file = Growing::default();
    let mut follower = Follower::new(file.clone());
    let mut got = Vec::new();
    for part in [&data[..a], &data[a..b], &data[b..]] {
        file.data.borrow_mut().extend_from_slice(part);
        match follower.poll() {
            Ok(events) => got.extend(events),
            Err(_) => return,
        }
    }
    if let Some(want) = &whole {
        assert_eq!(&blocks(got), want);
    }
});
