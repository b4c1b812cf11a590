//! The RoCE transport in userspace: what only userspace does with its
//! frames once the shared walk (`rocescope_common::wire::roce`) has filled
//! the record: the ICRC ([`icrc`]; the decoder checks it where the walk
//! set `Walked::icrc`), native InfiniBand's LRH, ICRC and VCRC ([`lrh`]),
//! and RDMA connection management ([`cm`]).
pub mod cm;
pub mod icrc;
pub mod lrh;
