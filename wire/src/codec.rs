//! Frames: every packet after the TCP connect is a 4-byte big-endian length followed by
//! that many bytes. The length is checked against the maximum before any buffer grows.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

use crate::jute::Record;

/// ZooKeeper's default `jute.maxbuffer`: the largest znode data.
pub const DEFAULT_JUTE_MAX_BUFFER: usize = 0xfffff;

/// The header allowance of `zookeeper.jute.maxbuffer.extrasize`, which ZooKeeper adds to
/// `jute.maxbuffer` when checking a frame's length.
pub const FRAME_ALLOWANCE: usize = 1024;

/// The largest frame by default: `jute.maxbuffer` plus the header allowance.
pub const DEFAULT_MAX_FRAME: usize = DEFAULT_JUTE_MAX_BUFFER + FRAME_ALLOWANCE;

/// Why a frame could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("frame length {len} exceeds the maximum of {max} bytes")]
    TooLarge { len: usize, max: usize },
    #[error("negative frame length {0}")]
    NegativeLength(i32),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Splits a byte stream into frame payloads (without their length prefix) and writes
/// payloads with one.
#[derive(Debug, Clone, Copy)]
pub struct FrameCodec {
    max_frame: usize,
}

impl FrameCodec {
    pub fn new(max_frame: usize) -> Self {
        FrameCodec { max_frame }
    }

    pub fn max_frame(&self) -> usize {
        self.max_frame
    }
}

impl Default for FrameCodec {
    fn default() -> Self {
        FrameCodec::new(DEFAULT_MAX_FRAME)
    }
}

impl Decoder for FrameCodec {
    type Item = Bytes;
    type Error = FrameError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Bytes>, FrameError> {
        if src.len() < 4 {
            return Ok(None);
        }
        let raw = i32::from_be_bytes([src[0], src[1], src[2], src[3]]);
        let len = usize::try_from(raw).map_err(|_| FrameError::NegativeLength(raw))?;
        if len > self.max_frame {
            return Err(FrameError::TooLarge {
                len,
                max: self.max_frame,
            });
        }
        if src.len() < 4 + len {
            src.reserve(4 + len - src.len());
            return Ok(None);
        }
        src.advance(4);
        Ok(Some(src.split_to(len).freeze()))
    }
}

impl Encoder<Bytes> for FrameCodec {
    type Error = FrameError;

    fn encode(&mut self, payload: Bytes, dst: &mut BytesMut) -> Result<(), FrameError> {
        write_frame(dst, self.max_frame, |buf| buf.put_slice(&payload))
    }
}

impl<T: Record> Encoder<&T> for FrameCodec {
    type Error = FrameError;

    fn encode(&mut self, record: &T, dst: &mut BytesMut) -> Result<(), FrameError> {
        write_frame(dst, self.max_frame, |buf| record.encode(buf))
    }
}

/// Appends one frame to `dst`: reserves the prefix, lets `body` write the payload in
/// place (no intermediate buffer), then fills the length in. A payload over `max_frame`
/// is removed again and reported, so an oversized reply never reaches the peer.
pub fn write_frame(
    dst: &mut BytesMut,
    max_frame: usize,
    body: impl FnOnce(&mut BytesMut),
) -> Result<(), FrameError> {
    let start = dst.len();
    dst.put_i32(0);
    body(dst);
    let len = dst.len() - start - 4;
    if len > max_frame {
        dst.truncate(start);
        return Err(FrameError::TooLarge {
            len,
            max: max_frame,
        });
    }
    // len <= max_frame, which callers keep far below i32::MAX.
    let prefix = u32::try_from(len).unwrap_or(u32::MAX).to_be_bytes();
    dst[start..start + 4].copy_from_slice(&prefix);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_frames_across_reads() {
        let mut codec = FrameCodec::default();
        let mut src = BytesMut::from(&[0, 0, 0, 3, b'a'][..]);
        assert!(codec.decode(&mut src).unwrap().is_none());
        src.extend_from_slice(b"bc\x00\x00\x00\x00");
        assert_eq!(
            codec.decode(&mut src).unwrap().unwrap(),
            Bytes::from_static(b"abc")
        );
        assert_eq!(codec.decode(&mut src).unwrap().unwrap(), Bytes::new());
        assert!(codec.decode(&mut src).unwrap().is_none());
    }

    #[test]
    fn rejects_oversized_and_negative_lengths_before_buffering() {
        let mut codec = FrameCodec::new(16);
        let mut src = BytesMut::from(&[0, 0, 0, 17][..]);
        assert!(matches!(
            codec.decode(&mut src),
            Err(FrameError::TooLarge { len: 17, max: 16 })
        ));
        let mut src = BytesMut::from(&[0xff, 0xff, 0xff, 0xff][..]);
        assert!(matches!(
            codec.decode(&mut src),
            Err(FrameError::NegativeLength(-1))
        ));
        let mut src = BytesMut::from(&[0x7f, 0xff, 0xff, 0xff][..]);
        assert!(codec.decode(&mut src).is_err());
        assert!(src.capacity() < 1024);
    }

    #[test]
    fn encodes_with_prefix_and_refuses_oversized_payloads() {
        let mut codec = FrameCodec::new(4);
        let mut dst = BytesMut::new();
        codec.encode(Bytes::from_static(b"abcd"), &mut dst).unwrap();
        assert_eq!(&dst[..], b"\x00\x00\x00\x04abcd");
        assert!(codec
            .encode(Bytes::from_static(b"abcde"), &mut dst)
            .is_err());
        assert_eq!(dst.len(), 8);
    }
}
