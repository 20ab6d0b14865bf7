//! LEB128 varints and zigzag, exactly as postcard encodes integers, for the hand-written
//! sample columns and record framing.

/// Appends `v` as an unsigned LEB128 varint (7 bits a byte, least significant first).
#[inline]
pub fn put_u64(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends `v` as an unsigned LEB128 varint.
#[inline]
pub fn put_u32(out: &mut Vec<u8>, v: u32) {
    put_u64(out, u64::from(v));
}

/// Maps signed to unsigned so that small magnitudes get small codes: 0, -1, 1, -2 → 0, 1, 2, 3.
#[inline]
pub fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// Inverse of [`zigzag`].
#[inline]
pub fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// A varint that is cut short or longer than its type allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadVarint;

/// Reads a u64 varint at `*pos`, advancing it. Accepts at most 10 bytes, the 10th at most 1,
/// like postcard.
#[inline(always)]
pub fn get_u64(buf: &[u8], pos: &mut usize) -> Result<u64, BadVarint> {
    let p = *pos;
    // One-byte values dominate every column, so they skip the loop.
    if let Some(&b) = buf.get(p)
        && b < 0x80
    {
        *pos = p + 1;
        return Ok(u64::from(b));
    }
    get_u64_slow(buf, pos)
}

#[cold]
fn get_u64_slow(buf: &[u8], pos: &mut usize) -> Result<u64, BadVarint> {
    let mut out = 0u64;
    for i in 0..10 {
        let b = *buf.get(*pos + i).ok_or(BadVarint)?;
        out |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            if i == 9 && b > 1 {
                return Err(BadVarint);
            }
            *pos += i + 1;
            return Ok(out);
        }
    }
    Err(BadVarint)
}

/// Reads a u32 varint at `*pos`, advancing it. Accepts at most 5 bytes, the 5th at most 15.
#[inline(always)]
pub fn get_u32(buf: &[u8], pos: &mut usize) -> Result<u32, BadVarint> {
    let p = *pos;
    if let Some(&b) = buf.get(p)
        && b < 0x80
    {
        *pos = p + 1;
        return Ok(u32::from(b));
    }
    get_u32_slow(buf, pos)
}

#[cold]
fn get_u32_slow(buf: &[u8], pos: &mut usize) -> Result<u32, BadVarint> {
    let mut out = 0u32;
    for i in 0..5 {
        let b = *buf.get(*pos + i).ok_or(BadVarint)?;
        out |= u32::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            if i == 4 && b > 0x0f {
                return Err(BadVarint);
            }
            *pos += i + 1;
            return Ok(out);
        }
    }
    Err(BadVarint)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_matches_postcard() {
        for v in [
            0u64,
            1,
            127,
            128,
            300,
            u32::MAX as u64,
            u64::MAX - 1,
            u64::MAX,
        ] {
            let mut ours = Vec::new();
            put_u64(&mut ours, v);
            assert_eq!(ours, postcard::to_allocvec(&v).unwrap());
            let mut pos = 0;
            assert_eq!(get_u64(&ours, &mut pos), Ok(v));
            assert_eq!(pos, ours.len());
        }
        for v in [0u32, 1, 127, 128, 16384, u32::MAX] {
            let mut ours = Vec::new();
            put_u32(&mut ours, v);
            assert_eq!(ours, postcard::to_allocvec(&v).unwrap());
            let mut pos = 0;
            assert_eq!(get_u32(&ours, &mut pos), Ok(v));
        }
        for v in [0i64, -1, 1, i64::MIN, i64::MAX] {
            assert_eq!(unzigzag(zigzag(v)), v);
            let mut ours = Vec::new();
            put_u64(&mut ours, zigzag(v));
            assert_eq!(ours, postcard::to_allocvec(&v).unwrap());
        }
    }

    #[test]
    fn rejects_overlong() {
        let mut pos = 0;
        assert_eq!(
            get_u32(&[0xff, 0xff, 0xff, 0xff, 0x10], &mut pos),
            Err(BadVarint)
        );
        assert_eq!(
            get_u32(&[0xff, 0xff, 0xff, 0xff, 0x0f], &mut pos),
            Ok(u32::MAX)
        );
        let mut pos = 0;
        assert_eq!(get_u64(&[0x80; 11], &mut pos), Err(BadVarint));
        assert_eq!(get_u64(&[0x80], &mut pos), Err(BadVarint));
    }
}
