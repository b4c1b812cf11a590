//! synth's UET leaves, below the fabric model that uses them: the frames
//! the UET model emits (`frame`) and its record of a run (`log`), so that
//! `model::spec::FrameSpec` and `model::fabric::Run` can carry them while
//! the UET model itself (`model::uet`) builds on the fabric.

pub mod frame;
pub mod log;
