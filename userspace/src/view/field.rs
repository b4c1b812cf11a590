//! Big-endian field reads that cannot panic.
//!
//! Views check their length once in `new_checked`, so these reads are always
//! in bounds in practice; reading through `get` anyway means a wrong offset
//! yields 0 instead of a panic on untrusted bytes.

/// `N` bytes at `at`, or zeros when they are not all there.
#[inline]
pub(crate) fn bytes<const N: usize>(buf: &[u8], at: usize) -> [u8; N] {
    at.checked_add(N)
        .and_then(|end| buf.get(at..end))
        .and_then(|s| s.try_into().ok())
        .unwrap_or([0; N])
}

#[inline]
pub(crate) fn u8_at(buf: &[u8], at: usize) -> u8 {
    buf.get(at).copied().unwrap_or(0)
}

#[inline]
pub(crate) fn be16(buf: &[u8], at: usize) -> u16 {
    u16::from_be_bytes(bytes(buf, at))
}

/// A 24-bit big-endian field (QPNs, PSNs, MSNs).
#[inline]
pub(crate) fn be24(buf: &[u8], at: usize) -> u32 {
    let [a, b, c] = bytes(buf, at);
    u32::from_be_bytes([0, a, b, c])
}

#[inline]
pub(crate) fn be32(buf: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(bytes(buf, at))
}

#[inline]
pub(crate) fn be64(buf: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(bytes(buf, at))
}

/// `buf[from..]`, empty when `from` is past the end.
#[inline]
pub(crate) fn tail(buf: &[u8], from: usize) -> &[u8] {
    buf.get(from..).unwrap_or(&[])
}

/// `buf[..len]`, or all of `buf` when it is shorter.
#[inline]
pub(crate) fn head(buf: &[u8], len: usize) -> &[u8] {
    buf.get(..len).unwrap_or(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_are_big_endian_and_never_panic() {
        let b = [0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0];
        assert_eq!(u8_at(&b, 7), 0xf0);
        assert_eq!(be16(&b, 0), 0x1234);
        assert_eq!(be24(&b, 1), 0x34_5678);
        assert_eq!(be32(&b, 4), 0x9abc_def0);
        assert_eq!(be64(&b, 0), 0x1234_5678_9abc_def0);
        assert_eq!(be32(&b, 6), 0);
        assert_eq!(u8_at(&b, 8), 0);
        assert_eq!(be16(&b, usize::MAX), 0);
        assert_eq!(tail(&b, 9), &[] as &[u8]);
    }
}
