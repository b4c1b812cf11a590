//! The RoCE transport in userspace: what only userspace does with its
//! frames once the shared walk (`rocescope_common::wire::roce`) has filled
//! the record: the ICRC ([`icrc`]; the decoder checks it where the walk
//! set `Walked::icrc`), native InfiniBand's LRH, ICRC and VCRC ([`lrh`]),
//! RDMA connection management ([`cm`]), and go-back-N sequencing on
//! 24-bit PSNs ([`sequencing`], with [`psn`] arithmetic and the missing
//! PSNs' ranges in [`gaps`]), which the analyzer drives through
//! `transport::sequencing::Sequencing`.
pub mod cm;
pub mod gaps;
pub mod icrc;
pub mod lrh;
pub mod psn;
pub mod sequencing;
