//! paddock-client
