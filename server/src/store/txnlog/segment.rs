//! The segment file format of the txn log. Every byte of it is written through this
//! module ([`encode_header`], [`encode_record`]) and read back through it ([`scan`]).
//!
//! # Naming
//! `dataLogDir/log.<first index>`: the index of the segment's first entry as 16
//! lower-case hex digits (`log.00000000000003e8`), so names sort in log order. A segment
//! is made as `log.<index>.tmp`, fsynced with its header and preallocation, and only then
//! renamed, so a named segment never has a torn header. Leftover `.tmp` files are
//! deleted when the log is opened.
//!
//! # Layout (integers little-endian)
//! ```text
//! header, 40 bytes:
//!   magic        8   b"PDKTXLOG"
//!   version      u32 1
//!   reserved     u32 0
//!   first_index  u64 index of the segment's first record
//!   prev_term    u64 term of the entry at first_index - 1 (0 before the first entry):
//!                    raft's log-matching check at every segment boundary, and against
//!                    the snapshot the log continues from
//!   header_crc   u32 CRC-32C of the 32 bytes above
//!   reserved     u32 0
//! records, back to back from offset 40:
//!   length       u32 payload length, never 0
//!   crc          u32 CRC-32C of the 4 length bytes, then the payload
//!   payload      one raft entry:
//!                  index u64 | term u64 | entry_type u8 (0 normal, 1 conf change,
//!                  2 conf change v2) | data_len u32 | data | context_len u32 | context
//! ```
//! Record indexes are consecutive from `first_index`. A zero length field where a record
//! would start ends the log: what follows is preallocated space, all zeros.
//!
//! # Preallocation and rotation
//! A segment grows in `preAllocSize` steps (`fallocate`, so the blocks are reserved), so
//! most appends don't change the file's size and a full disk fails the preallocation
//! rather than an append. The writer also zero-fills the preallocated space a step ahead
//! of the last record, so that an `fdatasync` finds written blocks and need not convert
//! extents and write the inode as well; the zeros read as the end of the log. Once a record
//! would take a segment past `segment_size`, the writer fsyncs the segment and starts the
//! next one, named by that record's index (a record bigger than `segment_size` gets a
//! segment to itself). Every segment but the last is therefore complete and fsynced: only
//! the last one can end in a torn write.
//!
//! # Truncation
//! When a new leader overwrites a suffix of the log, the writer deletes the segments that
//! start after the first replaced index, cuts the one holding it at that record
//! (`set_len` down, fsync, `set_len` back up, so the cut region reads as zeros) and goes
//! on appending there.

use crate::store::{u32_at, u64_at};
use bytes::Bytes;
use protobuf::ProtobufEnum;
use raft::prelude::{Entry, EntryType};

use crate::store::{crc32c, crc32c_append};

pub const MAGIC: [u8; 8] = *b"PDKTXLOG";
pub const VERSION: u32 = 1;
pub const HEADER_LEN: u64 = 40;
/// A record's `length | crc` prefix.
pub const RECORD_PREFIX_LEN: usize = 8;
/// The unit a disk writes atomically, at the least: a torn write leaves whole sectors
/// unwritten, which read back as the zeros of preallocated space.
pub const SECTOR: usize = 512;
/// The fixed part of a payload: index, term, type and the two lengths.
const PAYLOAD_FIXED_LEN: usize = 8 + 8 + 1 + 4 + 4;
/// The shortest record: an entry with no data and no context.
pub const PAYLOAD_MIN_RECORD_LEN: usize = RECORD_PREFIX_LEN + PAYLOAD_FIXED_LEN;

/// A segment's header fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub first_index: u64,
    pub prev_term: u64,
}

/// `log.` and 16 hex digits.
pub fn segment_name(first_index: u64) -> String {
    format!("log.{first_index:016x}")
}

/// The first index a segment's file name promises, or `None` for a name that is not a
/// segment's.
pub fn parse_segment_name(name: &str) -> Option<u64> {
    crate::store::parse_hex_name(name, "log.")
}

pub fn encode_header(header: Header) -> [u8; HEADER_LEN as usize] {
    let mut out = [0u8; HEADER_LEN as usize];
    out[0..8].copy_from_slice(&MAGIC);
    out[8..12].copy_from_slice(&VERSION.to_le_bytes());
    out[16..24].copy_from_slice(&header.first_index.to_le_bytes());
    out[24..32].copy_from_slice(&header.prev_term.to_le_bytes());
    let crc = crc32c(&out[0..32]);
    out[32..36].copy_from_slice(&crc.to_le_bytes());
    out
}

/// Why a segment's header was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    #[error("shorter than a segment header ({0} bytes)")]
    TooShort(usize),
    #[error("not a txn log segment (bad magic)")]
    Magic,
    #[error("segment format version {0} is not supported (this build reads {VERSION})")]
    Version(u32),
    #[error("header checksum mismatch")]
    Crc,
}

pub fn decode_header(file: &[u8]) -> Result<Header, HeaderError> {
    let Some(header) = file.get(..HEADER_LEN as usize) else {
        return Err(HeaderError::TooShort(file.len()));
    };
    if header[0..8] != MAGIC {
        return Err(HeaderError::Magic);
    }
    if u32_at(header, 32) != crc32c(&header[0..32]) {
        return Err(HeaderError::Crc);
    }
    let version = u32_at(header, 8);
    if version != VERSION {
        return Err(HeaderError::Version(version));
    }
    Ok(Header {
        first_index: u64_at(header, 16),
        prev_term: u64_at(header, 24),
    })
}

/// An entry too large for a record's 32-bit length.
#[derive(Debug, thiserror::Error)]
#[error("entry {index} is too large for a log record ({len} bytes)")]
pub struct RecordTooLarge {
    pub index: u64,
    pub len: usize,
}

/// Appends `entry` as one record to `out`; returns the record's length.
pub fn encode_record(entry: &Entry, out: &mut Vec<u8>) -> Result<usize, RecordTooLarge> {
    let payload_len = PAYLOAD_FIXED_LEN + entry.data.len() + entry.context.len();
    let too_large = || RecordTooLarge {
        index: entry.index,
        len: payload_len,
    };
    let length = u32::try_from(payload_len).map_err(|_| too_large())?;
    let data_len = u32::try_from(entry.data.len()).map_err(|_| too_large())?;
    let context_len = u32::try_from(entry.context.len()).map_err(|_| too_large())?;
    let start = out.len();
    out.reserve(RECORD_PREFIX_LEN + payload_len);
    out.extend_from_slice(&length.to_le_bytes());
    out.extend_from_slice(&[0; 4]); // the crc, filled in below
    out.extend_from_slice(&entry.index.to_le_bytes());
    out.extend_from_slice(&entry.term.to_le_bytes());
    // Every EntryType value fits a byte (0..=2).
    out.push(entry.get_entry_type().value() as u8);
    out.extend_from_slice(&data_len.to_le_bytes());
    out.extend_from_slice(&entry.data);
    out.extend_from_slice(&context_len.to_le_bytes());
    out.extend_from_slice(&entry.context);
    let crc = crc32c_append(
        crc32c(&out[start..start + 4]),
        &out[start + RECORD_PREFIX_LEN..],
    );
    out[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
    Ok(RECORD_PREFIX_LEN + payload_len)
}

/// Why the record at some offset could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Damage {
    /// A zero length field: the end of the log if only zeros follow.
    ZeroLength,
    /// Fewer than a record prefix's bytes are left in the file.
    ShortPrefix,
    /// The length field points past the end of the file.
    Overrun { length: u32 },
    /// The checksum does not match the bytes.
    Crc,
    /// The checksum matches but the payload is not an entry: written wrong, not torn.
    Undecodable(&'static str),
    /// The checksum matches but the entry is not the next index: written wrong, not torn.
    WrongIndex { expected: u64, found: u64 },
}

impl Damage {
    /// Whether the checksum matched: such a record was written whole, so it can't be a
    /// torn write.
    pub fn crc_matched(&self) -> bool {
        matches!(self, Damage::Undecodable(_) | Damage::WrongIndex { .. })
    }
}

impl std::fmt::Display for Damage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Damage::ZeroLength => write!(f, "a zero record length followed by non-zero bytes"),
            Damage::ShortPrefix => write!(f, "a partial record prefix at the end of the file"),
            Damage::Overrun { length } => {
                write!(
                    f,
                    "a record length ({length}) running past the end of the file"
                )
            }
            Damage::Crc => write!(f, "a record checksum mismatch"),
            Damage::Undecodable(why) => write!(f, "a record that is not a raft entry ({why})"),
            Damage::WrongIndex { expected, found } => {
                write!(f, "entry {found} where entry {expected} belongs")
            }
        }
    }
}

/// Reads the record at `offset`: its entry and length, with the CRC verified. The entry's
/// index is not checked against its position here.
pub fn read_record(file: &[u8], offset: usize) -> Result<(Entry, usize), Damage> {
    let len = check_record(file, offset)?;
    let payload = &file[offset + RECORD_PREFIX_LEN..offset + len];
    let entry = decode_payload(payload).map_err(Damage::Undecodable)?;
    Ok((entry, len))
}

/// The offsets of a segment's records from its header on, up to the first one that is
/// not whole with a matching CRC (where the written part ends), and that end: enough to
/// find any entry later without decoding the others.
pub fn record_offsets(file: &[u8]) -> (Vec<u64>, u64) {
    let mut offsets = Vec::new();
    let mut offset = HEADER_LEN as usize;
    while let Ok(len) = check_record(file, offset) {
        offsets.push(offset as u64);
        offset += len;
    }
    (offsets, offset as u64)
}

/// The length of the record at `offset`, once its CRC is verified.
fn check_record(file: &[u8], offset: usize) -> Result<usize, Damage> {
    let rest = file.get(offset..).unwrap_or_default();
    if rest.len() < RECORD_PREFIX_LEN {
        return Err(if rest.len() >= 4 && u32_at(rest, 0) == 0 {
            Damage::ZeroLength
        } else {
            Damage::ShortPrefix
        });
    }
    let length = u32_at(rest, 0);
    if length == 0 {
        return Err(Damage::ZeroLength);
    }
    let end = RECORD_PREFIX_LEN as u64 + u64::from(length);
    if end > rest.len() as u64 {
        return Err(Damage::Overrun { length });
    }
    let payload = &rest[RECORD_PREFIX_LEN..end as usize];
    if u32_at(rest, 4) != crc32c_append(crc32c(&rest[0..4]), payload) {
        return Err(Damage::Crc);
    }
    Ok(end as usize)
}

fn decode_payload(payload: &[u8]) -> Result<Entry, &'static str> {
    if payload.len() < PAYLOAD_FIXED_LEN {
        return Err("payload shorter than its fixed fields");
    }
    let entry_type = EntryType::from_i32(i32::from(payload[16])).ok_or("unknown entry type")?;
    let mut entry = Entry {
        index: u64_at(payload, 0),
        term: u64_at(payload, 8),
        entry_type,
        ..Default::default()
    };
    let data_len = u32_at(payload, 17) as usize;
    let data_end = 21usize
        .checked_add(data_len)
        .filter(|&end| end + 4 <= payload.len())
        .ok_or("data length past the payload")?;
    entry.data = Bytes::copy_from_slice(&payload[21..data_end]);
    let context_len = u32_at(payload, data_end) as usize;
    if data_end + 4 + context_len != payload.len() {
        return Err("context length does not fill the payload");
    }
    entry.context = Bytes::copy_from_slice(&payload[data_end + 4..]);
    Ok(entry)
}

/// What [`scan`] read from one segment.
#[derive(Debug)]
pub struct Scan {
    pub entries: Vec<Entry>,
    /// The file offset of each entry's record.
    pub offsets: Vec<u64>,
    /// Where the good records end: the offset the next record belongs at.
    pub end: u64,
    /// The first unreadable record, unless the good records are followed by zeros alone.
    pub damage: Option<(u64, Damage)>,
}

impl Scan {
    /// Each good record's file offset and its entry's term: what a segment remembers so
    /// it can be cut at any entry later.
    pub fn record_terms(&self) -> Vec<(u64, u64)> {
        self.offsets
            .iter()
            .zip(&self.entries)
            .map(|(&offset, e)| (offset, e.term))
            .collect()
    }
}

/// Reads a segment's records from its header on, up to the end or the first damage.
pub fn scan(file: &[u8], header: Header) -> Scan {
    let mut scan = Scan {
        entries: Vec::new(),
        offsets: Vec::new(),
        end: HEADER_LEN,
        damage: None,
    };
    let mut offset = HEADER_LEN as usize;
    let mut expected = header.first_index;
    loop {
        match read_record(file, offset) {
            Ok((entry, len)) if entry.index == expected => {
                scan.entries.push(entry);
                scan.offsets.push(offset as u64);
                offset += len;
                expected += 1;
            }
            Ok((entry, _)) => {
                let damage = Damage::WrongIndex {
                    expected,
                    found: entry.index,
                };
                scan.damage = Some((offset as u64, damage));
                break;
            }
            Err(damage) => {
                if !is_zero(file.get(offset..).unwrap_or_default()) {
                    scan.damage = Some((offset as u64, damage));
                }
                break;
            }
        }
    }
    scan.end = offset as u64;
    scan
}

pub fn is_zero(bytes: &[u8]) -> bool {
    bytes.iter().all(|&b| b == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::store::txnlog::tests::entry;

    #[test]
    fn names_sort_in_log_order_and_parse_back() {
        assert_eq!(segment_name(1), "log.0000000000000001");
        assert_eq!(segment_name(0x3e8), "log.00000000000003e8");
        assert!(segment_name(0xff) < segment_name(0x100));
        assert_eq!(parse_segment_name("log.00000000000003e8"), Some(1000));
        for bad in [
            "log.3e8",
            "log.00000000000003E8",
            "log.00000000000003e8.tmp",
            "snapshot.0000000000000001",
        ] {
            assert_eq!(parse_segment_name(bad), None, "{bad}");
        }
    }

    #[test]
    fn header_round_trips_and_rejects_damage() {
        let header = Header {
            first_index: 77,
            prev_term: 5,
        };
        let bytes = encode_header(header);
        assert_eq!(decode_header(&bytes), Ok(header));
        assert_eq!(decode_header(&bytes[..10]), Err(HeaderError::TooShort(10)));
        let mut flipped = bytes;
        flipped[17] ^= 1;
        assert_eq!(decode_header(&flipped), Err(HeaderError::Crc));
        let mut magic = bytes;
        magic[0] = b'X';
        assert_eq!(decode_header(&magic), Err(HeaderError::Magic));
    }

    #[test]
    fn records_round_trip_every_field() {
        let mut conf = entry(9, 3, b"conf change");
        conf.set_entry_type(EntryType::EntryConfChangeV2);
        conf.context = Bytes::from_static(b"ctx");
        let entries = [entry(8, 2, b""), conf, entry(10, 3, &[0; 1000])];
        let mut buf = Vec::new();
        for e in &entries {
            encode_record(e, &mut buf).unwrap();
        }
        let mut offset = 0;
        for e in &entries {
            let (read, len) = read_record(&buf, offset).unwrap();
            assert_eq!(&read, e);
            offset += len;
        }
        assert_eq!(offset, buf.len());
    }

    #[test]
    fn a_flipped_bit_anywhere_in_a_record_is_caught() {
        let mut buf = Vec::new();
        encode_record(&entry(1, 1, b"some data"), &mut buf).unwrap();
        for bit in 0..buf.len() * 8 {
            let mut bad = buf.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            assert!(read_record(&bad, 0).is_err(), "bit {bit}");
        }
    }
}
