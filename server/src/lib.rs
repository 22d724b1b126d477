//! paddock-server
