//! Network interface look-ups (in the caller's network namespace).
use std::ffi::CString;

/// The interface's index, `None` if there is no such interface.
pub fn index(name: &str) -> Option<u32> {
    let c = CString::new(name).ok()?;
    // SAFETY: a valid C string.
    let i = unsafe { libc::if_nametoindex(c.as_ptr()) };
    (i != 0).then_some(i)
}

/// What the tap checks while it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Up,
    Down,
    Gone,
}

/// Whether `name` exists and is administratively up (IFF_UP).
pub fn state(name: &str) -> State {
    let Some(flags) = flags(name) else {
        return State::Gone;
    };
    if flags & libc::IFF_UP as u32 != 0 {
        State::Up
    } else {
        State::Down
    }
}

fn flags(name: &str) -> Option<u32> {
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes.len() >= libc::IFNAMSIZ {
        return None;
    }
    // SAFETY: plain socket/ioctl calls on a zeroed ifreq holding the name;
    // the socket is closed before returning.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return None;
        }
        let mut req: libc::ifreq = std::mem::zeroed();
        for (dst, &src) in req.ifr_name.iter_mut().zip(bytes) {
            *dst = src as libc::c_char;
        }
        let r = libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut req);
        libc::close(fd);
        if r < 0 {
            return None;
        }
        Some(u32::from(req.ifr_ifru.ifru_flags as u16))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_up_and_nonsense_is_gone() {
        assert!(index("lo").is_some());
        assert_eq!(state("lo"), State::Up);
        assert_eq!(state("no-such-if0"), State::Gone);
        assert_eq!(index("no-such-if0"), None);
    }
}
