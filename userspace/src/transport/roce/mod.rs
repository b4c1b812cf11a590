//! The RoCE transport in userspace: what only userspace does with its
//! frames once the shared walk (`rocescope_common::wire::roce`) has filled
//! the record. RDMA connection management ([`cm`]) is here; the ICRC and
//! native InfiniBand's ICRC/VCRC are still in `decode` (docs/build.md,
//! "Still RoCE's, outside the folders").
pub mod cm;
