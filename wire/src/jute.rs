//! Jute, ZooKeeper's serialization: big-endian ints and longs, one-byte bools, and
//! length-prefixed buffers, strings and vectors in which a length of -1 means null.
//!
//! Decoding reads from a [`Reader`] over one frame. Every length is checked against the
//! bytes that remain before anything is allocated, so a frame of N bytes can never make
//! the decoder reserve more than a small multiple of N. Buffers are zero-copy slices of
//! the frame.
//!
//! Null buffers, strings and vectors decode as empty ones: no ZooKeeper client relies on
//! telling them apart, and it keeps `Option` out of every record.

use bytes::{Buf, BufMut, Bytes, BytesMut};

use crate::error::DecodeError;

/// A record that has a jute encoding: the types of `zookeeper.jute`.
pub trait Record: Sized {
    fn encode(&self, buf: &mut BytesMut);
    fn decode(r: &mut Reader) -> Result<Self, DecodeError>;

    /// The record alone, without a frame prefix.
    fn to_bytes(&self) -> Bytes {
        let mut buf = BytesMut::new();
        self.encode(&mut buf);
        buf.freeze()
    }

    /// Decodes a record that must take up all of `bytes`.
    fn from_bytes(bytes: Bytes) -> Result<Self, DecodeError> {
        let mut r = Reader::new(bytes);
        let record = Self::decode(&mut r)?;
        r.finish()?;
        Ok(record)
    }
}

/// A cursor over one frame's bytes.
#[derive(Debug, Clone)]
pub struct Reader {
    buf: Bytes,
}

impl Reader {
    pub fn new(buf: Bytes) -> Self {
        Reader { buf }
    }

    pub fn remaining(&self) -> usize {
        self.buf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Fails unless every byte has been consumed.
    pub fn finish(&self) -> Result<(), DecodeError> {
        match self.buf.len() {
            0 => Ok(()),
            n => Err(DecodeError::TrailingBytes(n)),
        }
    }

    fn need(&self, n: usize) -> Result<(), DecodeError> {
        if self.buf.len() < n {
            Err(DecodeError::Truncated {
                needed: n,
                remaining: self.buf.len(),
            })
        } else {
            Ok(())
        }
    }

    pub fn read_i32(&mut self) -> Result<i32, DecodeError> {
        self.need(4)?;
        Ok(self.buf.get_i32())
    }

    pub fn read_i64(&mut self) -> Result<i64, DecodeError> {
        self.need(8)?;
        Ok(self.buf.get_i64())
    }

    /// Jute writes a bool as one byte; Java reads any non-zero byte as true.
    pub fn read_bool(&mut self) -> Result<bool, DecodeError> {
        self.need(1)?;
        Ok(self.buf.get_u8() != 0)
    }

    /// An optional trailing bool, as the connect records carry for `readOnly`.
    pub fn read_trailing_bool(&mut self) -> Result<Option<bool>, DecodeError> {
        if self.is_empty() {
            Ok(None)
        } else {
            self.read_bool().map(Some)
        }
    }

    /// A length prefix: -1 (null) is `None`, any other negative value is an error, and
    /// the length must fit in what remains of the frame.
    fn read_len(&mut self) -> Result<Option<usize>, DecodeError> {
        let len = self.read_i32()?;
        if len == -1 {
            return Ok(None);
        }
        let len = usize::try_from(len).map_err(|_| DecodeError::NegativeLength(len))?;
        if len > self.buf.len() {
            return Err(DecodeError::LengthBeyondInput {
                len,
                remaining: self.buf.len(),
            });
        }
        Ok(Some(len))
    }

    /// A buffer; null reads as empty. The result shares the frame's memory.
    pub fn read_buffer(&mut self) -> Result<Bytes, DecodeError> {
        Ok(self.read_opt_buffer()?.unwrap_or_default())
    }

    /// A buffer where null (-1) is kept apart from empty.
    pub fn read_opt_buffer(&mut self) -> Result<Option<Bytes>, DecodeError> {
        Ok(self.read_len()?.map(|len| self.buf.split_to(len)))
    }

    /// A UTF-8 string; null reads as empty.
    pub fn read_ustring(&mut self) -> Result<String, DecodeError> {
        match self.read_len()? {
            None => Ok(String::new()),
            Some(len) => {
                let raw = self.buf.split_to(len);
                std::str::from_utf8(&raw)
                    .map(str::to_owned)
                    .map_err(|_| DecodeError::InvalidUtf8)
            }
        }
    }

    /// A vector; null reads as empty. Capacity is reserved only for as many elements as
    /// the remaining bytes could hold (every element of every record takes at least 4).
    pub fn read_vec<T>(
        &mut self,
        mut read_one: impl FnMut(&mut Self) -> Result<T, DecodeError>,
    ) -> Result<Vec<T>, DecodeError> {
        let count = self.read_i32()?;
        if count == -1 {
            return Ok(Vec::new());
        }
        let count = usize::try_from(count).map_err(|_| DecodeError::NegativeLength(count))?;
        if count > self.buf.len() / 4 {
            return Err(DecodeError::LengthBeyondInput {
                len: count,
                remaining: self.buf.len(),
            });
        }
        let mut items = Vec::with_capacity(count);
        for _ in 0..count {
            items.push(read_one(self)?);
        }
        Ok(items)
    }

    pub fn read_records<T: Record>(&mut self) -> Result<Vec<T>, DecodeError> {
        self.read_vec(T::decode)
    }

    pub fn read_strings(&mut self) -> Result<Vec<String>, DecodeError> {
        self.read_vec(Self::read_ustring)
    }
}

pub fn write_i32(buf: &mut BytesMut, v: i32) {
    buf.put_i32(v);
}

pub fn write_i64(buf: &mut BytesMut, v: i64) {
    buf.put_i64(v);
}

pub fn write_bool(buf: &mut BytesMut, v: bool) {
    buf.put_u8(u8::from(v));
}

/// Writes a length prefix. Lengths come from in-memory values already bounded by the
/// frame limit, so a length past `i32::MAX` is a caller bug, not input.
fn write_len(buf: &mut BytesMut, len: usize) {
    let len = i32::try_from(len).expect("jute length exceeds i32::MAX");
    buf.put_i32(len);
}

pub fn write_buffer(buf: &mut BytesMut, v: &[u8]) {
    write_len(buf, v.len());
    buf.put_slice(v);
}

/// Writes null (-1) for `None`.
pub fn write_opt_buffer(buf: &mut BytesMut, v: Option<&[u8]>) {
    match v {
        None => buf.put_i32(-1),
        Some(v) => write_buffer(buf, v),
    }
}

pub fn write_ustring(buf: &mut BytesMut, v: &str) {
    write_buffer(buf, v.as_bytes());
}

pub fn write_vec<T>(buf: &mut BytesMut, items: &[T], mut write_one: impl FnMut(&mut BytesMut, &T)) {
    write_len(buf, items.len());
    for item in items {
        write_one(buf, item);
    }
}

pub fn write_records<T: Record>(buf: &mut BytesMut, items: &[T]) {
    write_vec(buf, items, |buf, item| item.encode(buf));
}

pub fn write_strings<S: AsRef<str>>(buf: &mut BytesMut, items: &[S]) {
    write_vec(buf, items, |buf, s| write_ustring(buf, s.as_ref()));
}

// The primitives are records too, so that composite records can be declared field by
// field with `jute_record!`.

impl Record for i32 {
    fn encode(&self, buf: &mut BytesMut) {
        write_i32(buf, *self);
    }
    fn decode(r: &mut Reader) -> Result<Self, DecodeError> {
        r.read_i32()
    }
}

impl Record for i64 {
    fn encode(&self, buf: &mut BytesMut) {
        write_i64(buf, *self);
    }
    fn decode(r: &mut Reader) -> Result<Self, DecodeError> {
        r.read_i64()
    }
}

impl Record for bool {
    fn encode(&self, buf: &mut BytesMut) {
        write_bool(buf, *self);
    }
    fn decode(r: &mut Reader) -> Result<Self, DecodeError> {
        r.read_bool()
    }
}

impl Record for String {
    fn encode(&self, buf: &mut BytesMut) {
        write_ustring(buf, self);
    }
    fn decode(r: &mut Reader) -> Result<Self, DecodeError> {
        r.read_ustring()
    }
}

impl Record for Bytes {
    fn encode(&self, buf: &mut BytesMut) {
        write_buffer(buf, self);
    }
    fn decode(r: &mut Reader) -> Result<Self, DecodeError> {
        r.read_buffer()
    }
}

impl<T: Record> Record for Vec<T> {
    fn encode(&self, buf: &mut BytesMut) {
        write_records(buf, self);
    }
    fn decode(r: &mut Reader) -> Result<Self, DecodeError> {
        r.read_records()
    }
}

/// Declares a fieldless enum carried on the wire as an int, with `from_i32` (an unknown
/// value is a decode error naming `$field`) and `as_i32`.
#[macro_export]
macro_rules! int_enum {
    ($(#[$meta:meta])* pub enum $name:ident ($field:literal) {
        $($(#[$vmeta:meta])* $variant:ident = $value:literal,)*
    }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[repr(i32)]
        pub enum $name {
            $($(#[$vmeta])* $variant = $value,)*
        }

        impl $name {
            pub fn from_i32(value: i32) -> Result<Self, $crate::error::DecodeError> {
                match value {
                    $($value => Ok($name::$variant),)*
                    other => Err($crate::error::DecodeError::InvalidValue {
                        field: $field,
                        value: other.into(),
                    }),
                }
            }

            pub fn as_i32(self) -> i32 {
                self as i32
            }
        }
    };
}

/// Declares a struct whose jute encoding is its fields in order, as `zookeeper.jute`
/// declares records.
#[macro_export]
macro_rules! jute_record {
    ($(#[$meta:meta])* pub struct $name:ident { $($(#[$fmeta:meta])* pub $field:ident : $ty:ty,)* }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Default)]
        pub struct $name {
            $($(#[$fmeta])* pub $field: $ty,)*
        }

        impl $crate::jute::Record for $name {
            fn encode(&self, _buf: &mut ::bytes::BytesMut) {
                $($crate::jute::Record::encode(&self.$field, _buf);)*
            }
            fn decode(_r: &mut $crate::jute::Reader) -> Result<Self, $crate::error::DecodeError> {
                Ok($name { $($field: $crate::jute::Record::decode(_r)?,)* })
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reader(bytes: &[u8]) -> Reader {
        Reader::new(Bytes::copy_from_slice(bytes))
    }

    #[test]
    fn null_and_empty_buffers() {
        let mut r = reader(&[0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]);
        assert_eq!(r.read_opt_buffer(), Ok(None));
        assert_eq!(r.read_opt_buffer(), Ok(Some(Bytes::new())));
        assert!(r.finish().is_ok());
    }

    #[test]
    fn lengths_are_checked_before_allocation() {
        // A claimed length of 2^31-1 with four bytes behind it.
        let mut r = reader(&[0x7f, 0xff, 0xff, 0xff, 1, 2, 3, 4]);
        assert!(matches!(
            r.read_buffer(),
            Err(DecodeError::LengthBeyondInput { .. })
        ));
        let mut r = reader(&[0x7f, 0xff, 0xff, 0xff, 1, 2, 3, 4]);
        assert!(matches!(
            r.read_strings(),
            Err(DecodeError::LengthBeyondInput { .. })
        ));
        let mut r = reader(&[0xff, 0xff, 0xff, 0xfe]);
        assert_eq!(r.read_buffer(), Err(DecodeError::NegativeLength(-2)));
    }

    #[test]
    fn truncated_primitives() {
        assert!(matches!(
            reader(&[1, 2, 3]).read_i32(),
            Err(DecodeError::Truncated { .. })
        ));
        assert!(matches!(
            reader(&[1, 2, 3, 4, 5, 6, 7]).read_i64(),
            Err(DecodeError::Truncated { .. })
        ));
        assert!(reader(&[]).read_bool().is_err());
    }

    #[test]
    fn invalid_utf8_is_an_error() {
        let mut r = reader(&[0, 0, 0, 2, 0xc3, 0x28]);
        assert_eq!(r.read_ustring(), Err(DecodeError::InvalidUtf8));
    }

    #[test]
    fn big_endian_layout() {
        let mut buf = BytesMut::new();
        write_i32(&mut buf, 1);
        write_i64(&mut buf, -2);
        write_bool(&mut buf, true);
        write_ustring(&mut buf, "ab");
        assert_eq!(
            &buf[..],
            &[0, 0, 0, 1, 255, 255, 255, 255, 255, 255, 255, 254, 1, 0, 0, 0, 2, b'a', b'b']
        );
    }
}
