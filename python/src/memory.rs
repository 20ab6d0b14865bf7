//! The seam to a target's memory: the decoders read through [`MemoryReader`], which the
//! recorder implements with `process_vm_readv` and tests with [`RegionMemory`].

use thiserror::Error;

/// A failed read of the target's memory: the address is unmapped, or the process is gone.
/// Every decoder turns it into its own typed error; none retries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[error("cannot read {len} bytes of the target's memory at {addr:#x}")]
pub struct ReadError {
    pub addr: u64,
    pub len: usize,
}

/// Reads of another process's memory, whole or not at all.
///
/// The decoders never read more than their caps (`crate::limits`) in one call, and never
/// trust what they read: every pointer and length is checked before it is followed.
pub trait MemoryReader {
    /// Fills `buf` with the bytes at `addr`, all of them, or fails.
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), ReadError>;
}

impl<T: MemoryReader + ?Sized> MemoryReader for &T {
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), ReadError> {
        (**self).read(addr, buf)
    }
}

/// Reads `N` bytes at `addr`.
pub(crate) fn read_array<const N: usize>(
    mem: &impl MemoryReader,
    addr: u64,
) -> Result<[u8; N], ReadError> {
    let mut buf = [0; N];
    mem.read(addr, &mut buf)?;
    Ok(buf)
}

/// Reads `len` bytes at `addr` into a new buffer (the caller has bounded `len`).
pub(crate) fn read_vec(
    mem: &impl MemoryReader,
    addr: u64,
    len: usize,
) -> Result<Vec<u8>, ReadError> {
    let mut buf = vec![0; len];
    mem.read(addr, &mut buf)?;
    Ok(buf)
}

/// A little-endian field of a buffer read from the target; `None` past its end.
pub(crate) fn field_u64(buf: &[u8], at: usize) -> Option<u64> {
    let b = buf.get(at..at.checked_add(8)?)?;
    Some(u64::from_le_bytes(b.try_into().ok()?))
}

pub(crate) fn field_u32(buf: &[u8], at: usize) -> Option<u32> {
    let b = buf.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes(b.try_into().ok()?))
}

/// Memory made of byte regions at given addresses: tests, the fuzz target, and snapshots.
/// A read must fall inside one region.
#[derive(Debug, Clone, Default)]
pub struct RegionMemory {
    regions: Vec<(u64, Vec<u8>)>,
}

impl RegionMemory {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `bytes` at `addr` (a later region shadows an earlier one where they overlap).
    pub fn add(&mut self, addr: u64, bytes: Vec<u8>) -> &mut Self {
        self.regions.push((addr, bytes));
        self
    }

    /// Overwrites bytes inside a region (the latest holding them all); `false` when none
    /// does.
    pub fn write(&mut self, addr: u64, bytes: &[u8]) -> bool {
        for (start, region) in self.regions.iter_mut().rev() {
            let Some(at) = addr
                .checked_sub(*start)
                .and_then(|a| usize::try_from(a).ok())
            else {
                continue;
            };
            if let Some(dst) = at
                .checked_add(bytes.len())
                .and_then(|end| region.get_mut(at..end))
            {
                dst.copy_from_slice(bytes);
                return true;
            }
        }
        false
    }
}

impl MemoryReader for RegionMemory {
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), ReadError> {
        let err = ReadError {
            addr,
            len: buf.len(),
        };
        for (start, bytes) in self.regions.iter().rev() {
            let Some(at) = addr.checked_sub(*start) else {
                continue;
            };
            let Ok(at) = usize::try_from(at) else {
                continue;
            };
            let Some(end) = at.checked_add(buf.len()) else {
                continue;
            };
            if let Some(src) = bytes.get(at..end) {
                buf.copy_from_slice(src);
                return Ok(());
            }
        }
        Err(err)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn reads_within_one_region_only() {
        let mut m = RegionMemory::new();
        m.add(0x1000, vec![1, 2, 3, 4]).add(0x2000, vec![9; 4]);
        let mut b = [0; 2];
        m.read(0x1002, &mut b).unwrap();
        assert_eq!(b, [3, 4]);
        assert!(
            m.read(0x1003, &mut b).is_err(),
            "straddles the region's end"
        );
        assert!(m.read(0xfff, &mut b).is_err());
        assert!(m.read(u64::MAX, &mut b).is_err());
        m.read(0x2002, &mut b).unwrap();
        assert_eq!(b, [9, 9]);
    }
}
