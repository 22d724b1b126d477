//! Feeds arbitrary bytes through what the server does with a connection's input: the
//! frame decoder (with a small maximum, so oversized lengths are exercised), then the
//! connect record or a request, then re-encoding whatever decoded.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use paddock_wire::jute::Reader;
use paddock_wire::*;
use tokio_util::codec::Decoder;

fuzz_target!(|data: &[u8]| {
    let mut codec = FrameCodec::new(4096);
    let mut src = BytesMut::from(data);
    let mut first = true;
    while let Ok(Some(frame)) = codec.decode(&mut src) {
        assert!(frame.len() <= 4096);
        if first {
            first = false;
            if let Ok(connect) = ConnectRequest::from_bytes(frame.clone()) {
                assert_eq!(ConnectRequest::from_bytes(connect.to_bytes()), Ok(connect));
            }
            let _ = ConnectResponse::from_bytes(frame.clone());
        }
        if let Ok((header, request)) = Request::decode_frame(frame.clone()) {
            let mut buf = BytesMut::new();
            request.encode_with_header(header.xid, &mut buf);
            let (_, again) = Request::decode_frame(buf.freeze()).expect("re-encoded request decodes");
            assert_eq!(again, request);
        }
        for op in [OpCode::Multi, OpCode::GetData, OpCode::GetChildren2, OpCode::GetAcl] {
            let _ = Response::decode(op, &mut Reader::new(frame.clone()));
        }
        let _ = WatcherEvent::from_bytes(frame);
    }
});
