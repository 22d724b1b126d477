//! paddock-loadgen
