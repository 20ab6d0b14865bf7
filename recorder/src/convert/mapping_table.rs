//! The executable mappings of every traced process, as they change: what the host says
//! existed before the events started (a snapshot), then the mapping events (mmap, exec,
//! fork) applied in time order with the samples, so a process that has exited by the
//! time its samples are read still has the mappings it had when they were taken.

// Every frame of every sample is looked up: a fast hash matters here. The keys a target
// can choose (pids) are bounded by the kernel's pid space.
use rustc_hash::FxHashMap as HashMap;
use std::sync::Arc;

use hotspot_format::ModuleId;
use hotspot_symbols::{ModuleFile, ModuleFiles};

use crate::event::Mapping;
use crate::host::Host;

/// Where a process's mappings come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    /// Asked of the host (the process existed before its first event): a miss may mean a
    /// mapping made before the events started, so it asks again.
    Snapshot,
    /// Known from the process's start (its fork or exec) through events alone.
    Events,
}

/// One process's executable mappings, sorted by start and not overlapping, with what
/// was found for each.
#[derive(Debug, Clone)]
pub struct ProcessMaps {
    pub maps: Vec<Mapping>,
    /// Module id of each mapping in `maps`, filled lazily (reading a build-id costs I/O).
    pub modules: Vec<Option<ModuleId>>,
    /// The file of each mapping in `maps` (`Some(None)`: looked for, not an ELF file),
    /// filled lazily; shared through [`ModuleFiles`].
    pub files: Vec<Option<Option<Arc<ModuleFile>>>>,
    source: Source,
    /// Monotonic ns from which events apply: when the host was asked (an older event is
    /// already in its answer), or the fork or exec the mappings start from.
    since_ns: u64,
    /// The host had nothing (the process was gone): no point asking again.
    gone: bool,
}

impl ProcessMaps {
    fn new(maps: Vec<Mapping>, source: Source, since_ns: u64) -> Self {
        ProcessMaps {
            modules: vec![None; maps.len()],
            files: vec![None; maps.len()],
            maps,
            source,
            since_ns,
            gone: false,
        }
    }

    /// Adds a mapping, replacing whatever it overlaps (the kernel unmaps what a new
    /// mapping covers); the parts of an old mapping outside it stay, with what was found
    /// for it (same file, same module). The mappings are sorted and disjoint, so the ones
    /// it overlaps are one run, found by binary search.
    fn insert(&mut self, m: Mapping) {
        let lo = self.maps.partition_point(|x| x.end <= m.start);
        let hi = self.maps.partition_point(|x| x.start < m.end).max(lo);
        let mut maps = Vec::with_capacity(3);
        let mut modules = Vec::with_capacity(3);
        let mut files = Vec::with_capacity(3);
        if let Some(first) = self.maps.get(lo).filter(|o| lo < hi && o.start < m.start) {
            maps.push(Mapping {
                end: m.start,
                ..first.clone()
            });
            modules.push(self.modules[lo]);
            files.push(self.files[lo].clone());
        }
        let (start, end) = (m.start, m.end);
        maps.push(m);
        modules.push(None);
        files.push(None);
        if let Some(last) = hi
            .checked_sub(1)
            .filter(|&l| l >= lo && lo < hi)
            .and_then(|l| self.maps.get(l).map(|o| (l, o)))
            .filter(|(_, o)| o.end > end)
        {
            let (l, o) = last;
            maps.push(Mapping {
                start: end,
                offset: o.offset.wrapping_add(end - o.start),
                ..o.clone()
            });
            modules.push(self.modules[l]);
            files.push(self.files[l].clone());
        }
        debug_assert!(start < end);
        self.maps.splice(lo..hi, maps);
        self.modules.splice(lo..hi, modules);
        self.files.splice(lo..hi, files);
    }
}

/// Most executable mappings one process may hold: a target mapping more (a crafted
/// program, or one leaking JIT regions) has its lowest one dropped rather than exhaust the
/// recorder (each new mapping costs a pass over the others). Real programs: 10 to 500.
const MAX_MAPPINGS: usize = 4096;

/// Don't re-read a process's maps more often than this when addresses miss them (a JIT
/// keeps missing).
const MAPS_REFRESH_NS: u64 = 5_000_000;

/// Every traced process's mappings.
#[derive(Debug, Default)]
pub struct MappingTable {
    spaces: HashMap<u32, ProcessMaps>,
    /// Mapping events were lost: maps known from events may be incomplete, so a miss
    /// asks the host for them too.
    events_lost: bool,
}

impl MappingTable {
    /// Asks the host for `pid`'s mappings now, unless they are known already.
    pub fn snapshot(&mut self, pid: u32, host: &mut dyn Host) {
        self.entry(pid, host);
    }

    fn entry(&mut self, pid: u32, host: &mut dyn Host) -> &mut ProcessMaps {
        self.spaces.entry(pid).or_insert_with(|| read(host, pid))
    }

    /// The maps of `pid` (asked of the host the first time a process without events is
    /// seen).
    #[cfg(test)]
    pub fn get(&mut self, pid: u32, host: &mut dyn Host) -> &ProcessMaps {
        self.entry(pid, host)
    }

    /// The mappings known of `pid` (none when it is not known).
    pub fn maps_of(&self, pid: u32) -> &[Mapping] {
        self.spaces.get(&pid).map_or(&[], |e| &e.maps)
    }

    /// Index of the mapping of `pid` holding `addr` in a sample taken at `sample_ns`.
    /// A miss asks the host again where that can explain it: maps it gave (a library
    /// mapped between its answer and the first events), or any maps once mapping events
    /// were lost; never for a sample older than the answer (an older sample cannot be
    /// explained by a newer mapping), and at most every 5 ms.
    pub fn find(
        &mut self,
        pid: u32,
        addr: u64,
        sample_ns: u64,
        host: &mut dyn Host,
    ) -> Option<usize> {
        let events_lost = self.events_lost;
        let e = self.entry(pid, host);
        if let Some(i) = index(&e.maps, addr) {
            return Some(i);
        }
        if e.gone || (e.source == Source::Events && !events_lost) {
            return None;
        }
        let now = host.now_ns();
        if sample_ns <= e.since_ns || now.saturating_sub(e.since_ns) < MAPS_REFRESH_NS {
            return None;
        }
        let fresh = read(host, pid);
        if fresh.gone {
            e.gone = true;
            return None;
        }
        if fresh.maps != e.maps {
            let source = e.source;
            *e = ProcessMaps { source, ..fresh };
        } else {
            e.since_ns = fresh.since_ns;
        }
        index(&e.maps, addr)
    }

    /// The mapping at `idx` of `pid`.
    pub fn mapping(&self, pid: u32, idx: usize) -> Option<&Mapping> {
        self.spaces.get(&pid)?.maps.get(idx)
    }

    /// The module found for `pid`'s mapping `idx`, if one was.
    pub fn module(&self, pid: u32, idx: usize) -> Option<ModuleId> {
        *self.spaces.get(&pid)?.modules.get(idx)?
    }

    /// Forgets every mapping's module (a new capture numbers its modules anew); the
    /// files found stay.
    pub fn forget_modules(&mut self) {
        for e in self.spaces.values_mut() {
            e.modules.fill(None);
        }
    }

    pub fn set_module(&mut self, pid: u32, idx: usize, id: ModuleId) {
        if let Some(slot) = self
            .spaces
            .get_mut(&pid)
            .and_then(|e| e.modules.get_mut(idx))
        {
            *slot = Some(id);
        }
    }

    /// The file mapped at `pid`'s mapping `idx`, looked for once per mapping, and
    /// opened once across every process that maps it.
    pub fn file_of(
        &mut self,
        files: &mut ModuleFiles,
        pid: u32,
        idx: usize,
        host: &mut dyn Host,
    ) -> Option<Arc<ModuleFile>> {
        let e = self.spaces.get_mut(&pid)?;
        if let Some(Some(known)) = e.files.get(idx) {
            return known.clone();
        }
        let m = e.maps.get(idx)?;
        let file = files.get((m.inode, m.path.clone()), || host.open_mapping(pid, m));
        if let Some(slot) = e.files.get_mut(idx) {
            *slot = Some(file.clone());
        }
        file
    }

    /// A traced process mapped executable memory at `time_ns`.
    pub fn mmap(&mut self, pid: u32, m: Mapping, time_ns: u64, host: &mut dyn Host) {
        if m.end <= m.start {
            return;
        }
        // A process first seen through this event: ask what it mapped before (the answer
        // holds this mapping too).
        let e = self.entry(pid, host);
        if time_ns < e.since_ns {
            return;
        }
        if e.maps.len() >= MAX_MAPPINGS {
            e.maps.remove(0);
            e.modules.remove(0);
            e.files.remove(0);
        }
        e.insert(m);
    }

    /// A traced process replaced its image at `time_ns`: its mappings start over, from
    /// the events that follow.
    pub fn exec(&mut self, pid: u32, time_ns: u64) {
        if self.spaces.get(&pid).is_some_and(|e| time_ns < e.since_ns) {
            // Asked of the host after this exec: its answer is the new image already.
            return;
        }
        self.spaces
            .insert(pid, ProcessMaps::new(Vec::new(), Source::Events, time_ns));
    }

    /// A traced process forked `child` at `time_ns`: the child starts with a copy of the
    /// parent's mappings (a parent not seen yet is asked of the host first: it just
    /// forked, so it lives).
    pub fn fork(&mut self, parent: u32, child: u32, time_ns: u64, host: &mut dyn Host) {
        let p = self.entry(parent, host);
        if p.gone {
            return;
        }
        let mut c = p.clone();
        c.since_ns = time_ns;
        c.gone = false;
        self.spaces.insert(child, c);
    }

    /// A traced process exited a while ago (see `convert::departures`): no sample of it
    /// is left to read, so its mappings go.
    pub fn exit(&mut self, pid: u32) {
        self.spaces.remove(&pid);
    }

    /// Processes whose mappings are held.
    pub fn space_count(&self) -> usize {
        self.spaces.len()
    }

    /// Mapping events were lost: from now on a miss may ask the host for any process.
    pub fn events_were_lost(&mut self) {
        self.events_lost = true;
    }
}

/// `pid`'s mappings as the host gives them (empty and `gone` when it has none to show).
fn read(host: &mut dyn Host, pid: u32) -> ProcessMaps {
    let since = host.now_ns();
    let maps = host.mappings(pid).unwrap_or_default();
    let gone = maps.is_empty();
    let mut e = ProcessMaps::new(maps, Source::Snapshot, since);
    e.gone = gone;
    e
}

fn index(maps: &[Mapping], addr: u64) -> Option<usize> {
    let i = maps.partition_point(|m| m.start <= addr).checked_sub(1)?;
    (addr < maps[i].end).then_some(i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::FakeHost;

    fn m(start: u64, end: u64, offset: u64, path: &str) -> Mapping {
        Mapping {
            start,
            end,
            offset,
            inode: 1,
            path: path.into(),
        }
    }

    /// A table, and a host that knows of no process (every process is new to it).
    fn table() -> (MappingTable, FakeHost) {
        (MappingTable::default(), FakeHost::default())
    }

    #[test]
    fn a_new_mapping_replaces_what_it_overlaps_and_keeps_the_rest() {
        let (mut t, mut h) = table();
        let h = &mut h;
        t.exec(5, 10);
        t.mmap(5, m(0x1000, 0x5000, 0, "/a"), 11, h);
        t.set_module(5, 0, 7);
        t.mmap(5, m(0x2000, 0x3000, 0x40, "/b"), 12, h);
        let e = t.get(5, h);
        let got: Vec<_> = e
            .maps
            .iter()
            .map(|x| (x.start, x.end, x.offset, x.path.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                (0x1000, 0x2000, 0, "/a"),
                (0x2000, 0x3000, 0x40, "/b"),
                (0x3000, 0x5000, 0x2000, "/a"),
            ]
        );
        assert_eq!(
            e.modules,
            [Some(7), None, Some(7)],
            "pieces keep their module"
        );
        assert_eq!(t.find(5, 0x2fff, 20, h), Some(1));
        assert_eq!(t.find(5, 0x4fff, 20, h), Some(2));
        assert_eq!(
            t.find(5, 0x5000, 20, h),
            None,
            "event-fed maps do not ask the host again"
        );
    }

    #[test]
    fn a_mapping_across_several_keeps_only_their_outer_parts() {
        let (mut t, mut h) = table();
        let h = &mut h;
        t.exec(5, 0);
        t.mmap(5, m(0x1000, 0x2000, 0, "/a"), 1, h);
        t.mmap(5, m(0x3000, 0x4000, 0, "/b"), 1, h);
        t.mmap(5, m(0x5000, 0x6000, 0x10000, "/c"), 1, h);
        t.mmap(5, m(0x1800, 0x5800, 0, "/n"), 2, h);
        // In a gap, between two.
        t.mmap(5, m(0x7000, 0x8000, 0, "/g"), 3, h);
        let got: Vec<_> = t
            .get(5, h)
            .maps
            .iter()
            .map(|x| (x.start, x.end, x.offset, x.path.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                (0x1000, 0x1800, 0, "/a"),
                (0x1800, 0x5800, 0, "/n"),
                (0x5800, 0x6000, 0x10800, "/c"),
                (0x7000, 0x8000, 0, "/g"),
            ]
        );
    }

    #[test]
    fn exec_starts_over_and_fork_inherits() {
        let (mut t, mut h) = table();
        let h = &mut h;
        t.exec(5, 10);
        t.mmap(5, m(0x1000, 0x2000, 0, "/bin/sh"), 11, h);
        t.fork(5, 6, 12, h);
        t.mmap(5, m(0x8000, 0x9000, 0, "/lib/late.so"), 13, h);
        assert_eq!(
            t.find(6, 0x1800, 14, h),
            Some(0),
            "the child has the parent's mappings"
        );
        assert_eq!(
            t.find(6, 0x8800, 14, h),
            None,
            "but not what the parent mapped later"
        );
        t.exec(6, 15);
        t.mmap(6, m(0x4000, 0x5000, 0, "/usr/bin/sha256sum"), 16, h);
        assert_eq!(
            t.find(6, 0x1800, 17, h),
            None,
            "the old image is gone after exec"
        );
        assert_eq!(
            t.mapping(6, 0).map(|x| x.path.as_str()),
            Some("/usr/bin/sha256sum")
        );
        assert_eq!(
            t.find(5, 0x1800, 17, h),
            Some(0),
            "the parent keeps its own"
        );
        t.exit(6);
        assert_eq!(t.mapping(6, 0), None);
        // A parent that cannot be read: nothing to inherit, the child is read when seen.
        t.fork(99, 100, 1, h);
        assert!(!t.spaces.contains_key(&100));
    }

    #[test]
    fn events_older_than_a_host_answer_are_already_in_it() {
        let (mut t, mut h) = table();
        h.mappings.insert(9, vec![m(0x1000, 0x2000, 0, "/bin/x")]);
        let h = &mut h;
        t.snapshot(9, h);
        let read_at = t.get(9, h).since_ns;
        let before = t.get(9, h).maps.clone();
        t.exec(9, read_at - 1);
        t.mmap(9, m(0x10, 0x20, 0, "/old"), read_at - 1, h);
        assert_eq!(t.get(9, h).maps, before, "older events change nothing");
        t.mmap(9, m(0x10, 0x20, 0, "/new"), read_at + 1, h);
        assert_eq!(t.mapping(9, 0).map(|x| x.path.as_str()), Some("/new"));
        assert_eq!(h.mapping_reads[&9], 1, "asked once");
    }

    #[test]
    fn a_miss_asks_the_host_again_only_where_that_can_explain_it() {
        let (mut t, mut h) = table();
        h.mappings.insert(9, vec![m(0x1000, 0x2000, 0, "/bin/x")]);
        let h = &mut h;
        t.snapshot(9, h);
        let read_at = t.get(9, h).since_ns;
        // A library mapped after the snapshot, before the events started.
        h.mappings.insert(
            9,
            vec![
                m(0x1000, 0x2000, 0, "/bin/x"),
                m(0x8000, 0x9000, 0, "/lib/y"),
            ],
        );
        assert_eq!(
            t.find(9, 0x8800, read_at, h),
            None,
            "not for an older sample"
        );
        assert_eq!(t.find(9, 0x8800, read_at + 1, h), None, "not within 5 ms");
        h.clock.set(read_at + MAPS_REFRESH_NS);
        assert_eq!(t.find(9, 0x8800, read_at + 1, h), Some(1));
        assert_eq!(h.mapping_reads[&9], 2);
        // Maps known from events alone are not asked about, until events were lost.
        t.exec(5, 0);
        assert_eq!(t.find(5, 0x1000, 1, h), None);
        assert!(!h.mapping_reads.contains_key(&5));
        t.events_were_lost();
        h.clock.set(2 * MAPS_REFRESH_NS);
        assert_eq!(t.find(5, 0x1000, 1, h), None);
        assert_eq!(h.mapping_reads[&5], 1);
    }

    #[test]
    fn a_process_holds_a_bounded_number_of_mappings() {
        let (mut t, mut h) = table();
        let h = &mut h;
        t.exec(1, 0);
        for i in 0..(MAX_MAPPINGS as u64 + 10) {
            t.mmap(
                1,
                m(0x1000 * (i + 1), 0x1000 * (i + 1) + 0x800, 0, ""),
                1,
                h,
            );
        }
        assert_eq!(t.get(1, h).maps.len(), MAX_MAPPINGS);
        assert_eq!(t.find(1, 0x1000, 2, h), None, "the lowest went");
    }
}
