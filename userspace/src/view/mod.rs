//! Typed views of header bytes (smoltcp's `wire` style), shared by the
//! decoder and the transports' own views: a view checks its length once
//! (`new_checked`) and reads its fields through [`field`], which cannot
//! panic.

pub(crate) mod field;

/// The buffer ends before the header does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Truncated;

impl core::fmt::Display for Truncated {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("header truncated")
    }
}

impl std::error::Error for Truncated {}

/// Defines a fixed-length header view: the struct, `LEN`, `new_checked`,
/// `into_inner` and a private `bytes`.
macro_rules! fixed_view {
    ($(#[$meta:meta])* $name:ident, $len:expr) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct $name<T: AsRef<[u8]>> {
            buffer: T,
        }

        impl<T: AsRef<[u8]>> $name<T> {
            /// Header length in bytes.
            pub const LEN: usize = $len;

            /// Wraps `buffer` after checking it holds the whole header.
            pub fn new_checked(buffer: T) -> Result<Self, $crate::view::Truncated> {
                if buffer.as_ref().len() < Self::LEN {
                    Err($crate::view::Truncated)
                } else {
                    Ok(Self { buffer })
                }
            }

            /// The wrapped buffer.
            pub fn into_inner(self) -> T {
                self.buffer
            }

            fn bytes(&self) -> &[u8] {
                self.buffer.as_ref()
            }
        }
    };
}

/// Adds `payload()`: the bytes after a fixed-length header, with the
/// lifetime of the underlying buffer (so a walk can hand them on).
macro_rules! payload_after {
    ($name:ident) => {
        impl<'a, T: AsRef<[u8]> + ?Sized> $name<&'a T> {
            /// The bytes after this header.
            pub fn payload(&self) -> &'a [u8] {
                $crate::view::field::tail(
                    <T as AsRef<[u8]>>::as_ref(self.buffer),
                    $name::<&'a T>::LEN,
                )
            }
        }
    };
}

pub(crate) use {fixed_view, payload_after};
