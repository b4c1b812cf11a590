//! RoCE's 24-bit PSN arithmetic (`transport::roce::psn`), for the
//! analyzer's go-back-N consumers that still take a cumulative PSN: the
//! NIC timer (`rto`), livelock runs, pairing by response PSN, NIC latency
//! samples (docs/build.md, "Still RoCE's, outside the folders").

pub use crate::transport::roce::psn::{add, after, diff, max};
