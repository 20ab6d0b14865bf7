//! Line tables: from a code object's table bytes and first line to the source line of each
//! bytecode offset, as CPython's own `PyCode_Addr2Line` answers it, for the three formats
//! (3.8–3.9 `co_lnotab`, 3.10 `co_linetable`, 3.11+ location table). Decoded once into
//! sorted ranges; looked up by binary search. Checked against `PyCode_Addr2Line` and
//! `co_positions`/`co_lines` of every installed interpreter by `tests/line_tables.rs`.

use thiserror::Error;

use crate::layout::LineFormat;
use crate::limits::MAX_LINE_TABLE_BYTES;

/// What is wrong with a line table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum LineTableError {
    #[error("a line table of {0} bytes, more than {max}", max = MAX_LINE_TABLE_BYTES)]
    TooLong(u64),
    #[error("a pair-format line table of odd length {0}")]
    OddLength(usize),
    #[error("a location table whose entry at byte {0} does not start with its marker bit")]
    NoEntryStart(usize),
    #[error("a location table whose varint at byte {0} runs past its end or 32 bits")]
    BadVarint(usize),
}

/// Bytecode bytes `start..end` are on `line` (`None`: no line, an artificial instruction).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineRange {
    pub start: u32,
    pub end: u32,
    pub line: Option<u32>,
}

/// A decoded line table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineTable {
    ranges: Vec<LineRange>,
    first_line: u32,
}

impl LineTable {
    /// Decodes `bytes` in `format` for a code object starting on `first_line`.
    pub fn decode(
        format: LineFormat,
        first_line: u32,
        bytes: &[u8],
    ) -> Result<Self, LineTableError> {
        if bytes.len() as u64 > MAX_LINE_TABLE_BYTES {
            return Err(LineTableError::TooLong(bytes.len() as u64));
        }
        let ranges = match format {
            LineFormat::Lnotab => lnotab(first_line, bytes)?,
            LineFormat::Linetable310 => linetable_310(first_line, bytes)?,
            LineFormat::Locations => locations(first_line, bytes)?,
        };
        Ok(LineTable { ranges, first_line })
    }

    /// The line of the instruction at byte offset `offset` of the bytecode; `None` when
    /// the table gives none. Like `PyCode_Addr2Line`, a frame that has not started (no
    /// offset, [`crate::CodePosition::BeforeStart`]) is on the first line: pass
    /// [`Self::first_line`] for it.
    pub fn line_at(&self, offset: u32) -> Option<u32> {
        let i = self.ranges.partition_point(|r| r.end <= offset);
        let r = self.ranges.get(i)?;
        (r.start <= offset).then_some(r.line).flatten()
    }

    /// `co_firstlineno`.
    pub fn first_line(&self) -> u32 {
        self.first_line
    }

    /// The decoded ranges, sorted, non-empty, not overlapping.
    pub fn ranges(&self) -> &[LineRange] {
        &self.ranges
    }
}

/// A line number computed from untrusted deltas: `None` when negative or past `u32`
/// (0 is a line CPython gives, to code compiled from an empty string).
fn line(v: i64) -> Option<u32> {
    u32::try_from(v).ok()
}

/// Appends `start..end` on `line`, merging with the previous range when contiguous and on
/// the same line; empty ranges are dropped.
fn push(out: &mut Vec<LineRange>, start: u64, end: u64, line: Option<u32>) {
    let (Ok(start), Ok(end)) = (
        u32::try_from(start),
        u32::try_from(end.min(u64::from(u32::MAX))),
    ) else {
        return;
    };
    if end <= start {
        return;
    }
    if let Some(last) = out.last_mut()
        && last.end == start
        && last.line == line
    {
        last.end = end;
        return;
    }
    out.push(LineRange { start, end, line });
}

/// 3.8, 3.9: `(byte delta, line delta)` pairs, the line delta signed. The line of offset
/// `q` is the first line plus the line deltas of every pair whose cumulative address is
/// at most `q`; past the last pair the line stays (the table has no end).
fn lnotab(first_line: u32, b: &[u8]) -> Result<Vec<LineRange>, LineTableError> {
    if !b.len().is_multiple_of(2) {
        return Err(LineTableError::OddLength(b.len()));
    }
    let mut out = Vec::new();
    let mut line_no = i64::from(first_line);
    let (mut start, mut addr) = (0u64, 0u64);
    for pair in b.chunks_exact(2) {
        addr += u64::from(pair[0]);
        if addr > start {
            push(&mut out, start, addr, line(line_no));
            start = addr;
        }
        line_no += i64::from(pair[1] as i8);
    }
    push(&mut out, start, u64::from(u32::MAX), line(line_no));
    Ok(out)
}

/// 3.10: `(byte delta, line delta)` pairs; each pair is a range of its byte delta after
/// the previous one's end, on the running line plus its delta, or on no line for -128
/// (which leaves the running line alone). Past the last range: no line.
fn linetable_310(first_line: u32, b: &[u8]) -> Result<Vec<LineRange>, LineTableError> {
    if !b.len().is_multiple_of(2) {
        return Err(LineTableError::OddLength(b.len()));
    }
    let mut out = Vec::new();
    let mut line_no = i64::from(first_line);
    let mut end = 0u64;
    for pair in b.chunks_exact(2) {
        let start = end;
        end += u64::from(pair[0]);
        let delta = pair[1] as i8;
        let this = if delta == -128 {
            None
        } else {
            line_no += i64::from(delta);
            line(line_no)
        };
        push(&mut out, start, end, this);
    }
    Ok(out)
}

/// 3.11+: entries of 1–8 code units (2 bytes each). The first byte of an entry has bit 7
/// set, its code in bits 3–6 and its length minus one in bits 0–2: code 15 no line, 14
/// long form and 13 no columns (a signed varint line delta follows), 10–12 one line
/// (delta code - 10), 0–9 short forms (same line). The rest of an entry (columns, end
/// lines) matters not for lines.
fn locations(first_line: u32, b: &[u8]) -> Result<Vec<LineRange>, LineTableError> {
    let mut out = Vec::new();
    let mut line_no = i64::from(first_line);
    let mut end = 0u64;
    let mut i = 0;
    while i < b.len() {
        let head = b[i];
        if head & 0x80 == 0 {
            return Err(LineTableError::NoEntryStart(i));
        }
        let code = (head >> 3) & 15;
        let units = u64::from(head & 7) + 1;
        let delta = match code {
            15 => 0,
            13 | 14 => signed_varint(b, i + 1)?,
            10..=12 => i64::from(code) - 10,
            _ => 0,
        };
        line_no += delta;
        let start = end;
        end += 2 * units;
        push(
            &mut out,
            start,
            end,
            if code == 15 { None } else { line(line_no) },
        );
        i += 1;
        while i < b.len() && b[i] & 0x80 == 0 {
            i += 1;
        }
    }
    Ok(out)
}

/// The 6-bit-chunk varint at `at` (bit 6: more follows), at most 32 bits.
fn varint(b: &[u8], mut at: usize) -> Result<u64, LineTableError> {
    let start = at;
    let mut value = 0u64;
    let mut shift = 0;
    loop {
        let byte = *b.get(at).ok_or(LineTableError::BadVarint(start))?;
        if byte & 0x80 != 0 || shift > 30 {
            return Err(LineTableError::BadVarint(start));
        }
        value |= u64::from(byte & 63) << shift;
        if byte & 64 == 0 {
            return Ok(value);
        }
        shift += 6;
        at += 1;
    }
}

/// A varint whose low bit is the sign.
fn signed_varint(b: &[u8], at: usize) -> Result<i64, LineTableError> {
    let v = varint(b, at)?;
    let magnitude = (v >> 1) as i64;
    Ok(if v & 1 != 0 { -magnitude } else { magnitude })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn lines(t: &LineTable, upto: u32) -> Vec<Option<u32>> {
        (0..upto).step_by(2).map(|o| t.line_at(o)).collect()
    }

    #[test]
    fn lnotab_accumulates_up_to_the_offset() {
        // first line 10: bytes 0..6 line 10, then +1 at 6, +300 over three pairs at 10
        // (two pairs of delta 0 address), then -2 at 12.
        let t = LineTable::decode(
            LineFormat::Lnotab,
            10,
            &[6, 1, 4, 127, 0, 127, 0, 46, 2, (-2i8) as u8],
        )
        .unwrap();
        assert_eq!(
            lines(&t, 16),
            [10, 10, 10, 11, 11, 311, 309, 309].map(Some).to_vec()
        );
        assert_eq!(t.line_at(100_000), Some(309), "lnotab has no end");
        assert_eq!(
            LineTable::decode(LineFormat::Lnotab, 1, &[1]),
            Err(LineTableError::OddLength(1))
        );
    }

    #[test]
    fn linetable_310_ranges_and_no_line() {
        // 4 bytes on first+1, 2 bytes no line, 0-length +5, 4 bytes +1 (= first+7).
        let t =
            LineTable::decode(LineFormat::Linetable310, 20, &[4, 1, 2, 0x80, 0, 5, 4, 1]).unwrap();
        assert_eq!(
            lines(&t, 12),
            vec![Some(21), Some(21), None, Some(27), Some(27), None]
        );
    }

    #[test]
    fn locations_forms() {
        // One-line form +1 for 2 units (2 column bytes), short form 1 unit, no-column
        // form with delta -1 (svarint 3), no-location 1 unit, long form +70 (svarint 140:
        // 0b10001100 = 12 | 64, 2) and end line/columns.
        let t = LineTable::decode(
            LineFormat::Locations,
            5,
            &[
                0x80 | (11 << 3) | 1,
                1,
                2,
                0x80 | (3 << 3),
                7,
                0x80 | (13 << 3),
                3,
                0x80 | (15 << 3),
                0x80 | (14 << 3) | 2,
                12 | 64,
                2,
                0,
                1,
                1,
            ],
        )
        .unwrap();
        assert_eq!(
            lines(&t, 16),
            vec![
                Some(6),
                Some(6),
                Some(6),
                Some(5),
                None,
                Some(75),
                Some(75),
                Some(75)
            ]
        );
        assert_eq!(t.line_at(16), None, "past the table");
    }

    #[test]
    fn hostile_location_tables() {
        use LineFormat::Locations;
        assert_eq!(
            LineTable::decode(Locations, 1, &[0x05]),
            Err(LineTableError::NoEntryStart(0))
        );
        assert_eq!(
            LineTable::decode(Locations, 1, &[0x80 | (13 << 3), 64, 64]),
            Err(LineTableError::BadVarint(1))
        );
        assert_eq!(
            LineTable::decode(
                Locations,
                1,
                &[0x80 | (13 << 3), 64 | 1, 64, 64, 64, 64, 64, 1]
            ),
            Err(LineTableError::BadVarint(1))
        );
        // A line that goes below zero has no line, and decoding goes on.
        let one_up = [0x80 | (11 << 3), 0, 0];
        let mut b = vec![0x80 | (13 << 3), 5];
        b.extend(one_up);
        b.extend(one_up);
        let t = LineTable::decode(Locations, 1, &b).unwrap();
        assert_eq!(lines(&t, 6), vec![None, Some(0), Some(1)]);
        let big = vec![0x80; (MAX_LINE_TABLE_BYTES + 1) as usize];
        assert!(matches!(
            LineTable::decode(Locations, 1, &big),
            Err(LineTableError::TooLong(_))
        ));
    }
}
