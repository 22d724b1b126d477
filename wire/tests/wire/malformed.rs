//! Bad input: truncated, oversized, negative-length and garbage frames are errors,
//! never panics and never large allocations.

use bytes::{Bytes, BytesMut};
use paddock_wire::codec::{FrameCodec, FrameError};
use paddock_wire::*;
use proptest::prelude::*;
use tokio_util::codec::Decoder;

fn encoded(request: &Request) -> Bytes {
    let mut buf = BytesMut::new();
    request.encode_with_header(7, &mut buf);
    buf.freeze()
}

#[test]
fn every_truncation_of_a_request_is_an_error() {
    let request = Request::Multi(vec![
        Request::Create(CreateRequest {
            path: "/a".into(),
            data: Bytes::from_static(b"data").into(),
            acl: Acl::open_unsafe(),
            flags: 0,
        }),
        Request::Delete(PathVersionRequest {
            path: "/a".into(),
            version: -1,
        }),
    ]);
    let frame = encoded(&request);
    for cut in 0..frame.len() {
        assert!(
            Request::decode_frame(frame.slice(..cut)).is_err(),
            "a frame cut at {cut} decoded"
        );
    }
    assert!(Request::decode_frame(frame).is_ok());
}

#[test]
fn negative_and_oversized_lengths_inside_records() {
    // getData with a path length of -2, then of 2^31-1.
    let mut frame = BytesMut::new();
    frame.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 4]);
    frame.extend_from_slice(&(-2i32).to_be_bytes());
    assert_eq!(
        Request::decode_frame(frame.clone().freeze()),
        Err(DecodeError::NegativeLength(-2))
    );
    frame.truncate(8);
    frame.extend_from_slice(&i32::MAX.to_be_bytes());
    frame.extend_from_slice(b"/a\x00");
    assert!(matches!(
        Request::decode_frame(frame.freeze()),
        Err(DecodeError::LengthBeyondInput { .. })
    ));
}

#[test]
fn unknown_and_misplaced_op_codes() {
    assert_eq!(
        Request::decode_frame(Bytes::from_static(&[0, 0, 0, 1, 0, 0, 0, 99])),
        Err(DecodeError::UnknownOpCode(99))
    );
    // A getData (4) inside a write multi is refused, as ZooKeeper refuses it.
    let bad_multi = encoded(&Request::Multi(vec![Request::GetData(
        WatchedPathRequest {
            path: "/a".into(),
            watch: false,
        },
    )]));
    assert_eq!(
        Request::decode_frame(bad_multi),
        Err(DecodeError::UnexpectedOpCode(4))
    );
}

#[test]
fn a_frame_over_the_maximum_is_refused_before_it_is_buffered() {
    let mut codec = FrameCodec::default();
    let mut src = BytesMut::new();
    src.extend_from_slice(&((DEFAULT_MAX_FRAME + 1) as i32).to_be_bytes());
    assert!(matches!(
        codec.decode(&mut src),
        Err(FrameError::TooLarge { .. })
    ));
    let mut src = BytesMut::from(&DEFAULT_MAX_FRAME.to_be_bytes()[4..]);
    assert!(codec
        .decode(&mut src)
        .expect("a maximal frame is allowed")
        .is_none());
}

proptest! {
    #[test]
    fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let frame = Bytes::from(bytes);
        let _ = Request::decode_frame(frame.clone());
        let _ = ConnectRequest::from_bytes(frame.clone());
        let _ = ConnectResponse::from_bytes(frame.clone());
        for op in [OpCode::Multi, OpCode::GetData, OpCode::GetAcl, OpCode::WhoAmI] {
            let _ = Response::decode(op, &mut paddock_wire::jute::Reader::new(frame.clone()));
        }
        let mut codec = FrameCodec::new(128);
        let mut src = BytesMut::from(&frame[..]);
        while let Ok(Some(_)) = codec.decode(&mut src) {}
    }
}
