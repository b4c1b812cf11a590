//! The matcher's open keys ([`super`]): a key, and its state while it is
//! open — a slot of two cache lines holding the key, its session and its
//! open transmission, one entry per tap that saw it.

/// A frame's key: its flow (a [`super::Matcher`] flow number), PSN,
/// opcode and ICRC.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Key {
    pub(super) flow: u32,
    pub(super) psn: u32,
    /// 0 when the frame was cut before its ICRC (`has_icrc` false).
    pub(super) icrc: u32,
    pub(super) has_icrc: bool,
    pub(super) opcode: u8,
}

impl Key {
    /// The key's fields in one number.
    fn packed(&self) -> u128 {
        u128::from(self.flow)
            | u128::from(self.psn) << 32
            | u128::from(self.icrc) << 64
            | u128::from(self.opcode) << 96
            | u128::from(self.has_icrc) << 104
    }
}

/// One round of the hasher a key: the derived `Hash` gave it the five
/// fields one by one, each shifted into the hasher's buffer.
impl std::hash::Hash for Key {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u128(self.packed());
    }
}

/// Taps a slot holds without allocating: a frame crosses a few taps.
pub(super) const INLINE_TAPS: usize = 4;

/// A tap's sightings of a key in the key's session.
#[derive(Clone, Copy, Debug, Default)]
struct Seen {
    /// Its sighting in the open transmission (while `in_group`).
    t: u64,
    /// Its sightings in the session.
    occ: u32,
    tap: u16,
    /// It saw the open transmission.
    in_group: bool,
}

/// An open key: the key, its session's sightings per tap and its open
/// transmission's, and which [`super::Matcher`] `order` entry will close
/// it. 128 bytes, aligned to them: two cache lines (the state was 200
/// bytes, up to four).
#[derive(Debug, Default)]
#[repr(align(64))]
pub(super) struct Slot {
    pub(super) key: Key,
    /// The position (counted from the first entry ever) of the key's last
    /// entry in the matcher's `order`.
    pub(super) entry: u64,
    pub(super) last_any: u64,
    /// The open transmission's number in the session (the highest `occ`).
    number: u32,
    /// A tap saw the key twice in the session (a resend, or identical
    /// frames such as duplicate ACKs): which record belongs to which
    /// transmission is a guess, so their delays are left out.
    pub(super) ambiguous: bool,
    /// Taps in `inline` (while `more` is empty).
    len: u8,
    inline: [Seen; INLINE_TAPS],
    /// Every tap once more than [`INLINE_TAPS`] saw the key in the session.
    more: Vec<Seen>,
}

const _: () = assert!(std::mem::size_of::<Slot>() == 128);

impl Slot {
    /// The slot of `key`, first seen at `iface` at `now`, whose `order`
    /// entry is `entry`.
    pub(super) fn open(&mut self, key: Key, entry: u64, iface: u16, now: u64) {
        self.key = key;
        self.entry = entry;
        self.last_any = now;
        self.number = 1;
        self.ambiguous = false;
        self.more.clear();
        self.len = 1;
        self.inline[0] = Seen {
            t: now,
            occ: 1,
            tap: iface,
            in_group: true,
        };
    }

    fn seen(&self) -> &[Seen] {
        if self.more.is_empty() {
            &self.inline[..usize::from(self.len)]
        } else {
            &self.more
        }
    }

    fn seen_mut(&mut self) -> &mut [Seen] {
        if self.more.is_empty() {
            &mut self.inline[..usize::from(self.len)]
        } else {
            &mut self.more
        }
    }

    /// Adds a tap; returns its place in [`Slot::seen`].
    fn push(&mut self, x: Seen) -> usize {
        if self.more.is_empty() && usize::from(self.len) < INLINE_TAPS {
            self.inline[usize::from(self.len)] = x;
            self.len += 1;
            usize::from(self.len) - 1
        } else {
            if self.more.is_empty() {
                self.more
                    .extend_from_slice(&self.inline[..usize::from(self.len)]);
            }
            self.more.push(x);
            self.more.len() - 1
        }
    }

    /// The open transmission's sightings (tap, time) into `group`; the
    /// transmission is closed.
    pub(super) fn take_group(&mut self, group: &mut Vec<(u16, u64)>) {
        group.clear();
        for s in self.seen_mut() {
            if s.in_group {
                group.push((s.tap, s.t));
                s.in_group = false;
            }
        }
    }

    /// A later sighting of the key, at `iface` at `now` (`window`: the
    /// match window). When it closes the open transmission, returns
    /// whether that was ambiguous, its sightings in `group`.
    pub(super) fn sight(
        &mut self,
        iface: u16,
        now: u64,
        window: u64,
        group: &mut Vec<(u16, u64)>,
    ) -> Option<bool> {
        let mut closed = None;
        if now.abs_diff(self.last_any) > window {
            // A new session of the key.
            self.take_group(group);
            closed = Some(self.ambiguous);
            self.len = 0;
            self.more.clear();
            self.number = 0;
            self.ambiguous = false;
        }
        let (at, n) = match self.seen().iter().position(|s| s.tap == iface) {
            Some(at) => {
                let s = &mut self.seen_mut()[at];
                s.occ += 1;
                (at, s.occ)
            }
            None => {
                let fresh = Seen {
                    t: 0,
                    occ: 1,
                    tap: iface,
                    in_group: false,
                };
                (self.push(fresh), 1)
            }
        };
        self.ambiguous |= n > 1;
        if n > self.number {
            // This tap's n-th sighting: the n-th transmission (the
            // earlier ones passed it already).
            if self.number > 0 && closed.is_none() {
                self.take_group(group);
                closed = Some(true);
            }
            self.number = n;
        }
        let s = &mut self.seen_mut()[at];
        if !s.in_group {
            s.in_group = true;
            s.t = now;
        }
        closed
    }
}

/// An [`Order`] entry: a key's slot and its last sighting then;
/// `superseded` once a later sighting of the key pushed its own entry
/// (expiry skips it without reading the slot).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Expiry {
    pub(super) slot: u32,
    pub(super) superseded: bool,
    pub(super) t: u64,
}

/// The open keys' entries by their last sighting, first in first out: a
/// ring whose length is a power of two, the entry at position `p`
/// (counted from the first entry ever) at `p & (length - 1)` — a slot's
/// `entry` names its place with no subtraction or wrap test (a
/// `VecDeque`'s were ~40 instructions a sighting).
#[derive(Debug, Default)]
pub(super) struct Order {
    ring: Vec<Expiry>,
    /// The first entry's position (entries popped so far).
    head: u64,
    /// The next entry's position.
    tail: u64,
}

impl Order {
    pub(super) fn len(&self) -> usize {
        (self.tail - self.head) as usize
    }

    pub(super) fn is_empty(&self) -> bool {
        self.tail == self.head
    }

    /// The position the next entry gets.
    pub(super) fn next(&self) -> u64 {
        self.tail
    }

    fn at(&self, p: u64) -> usize {
        p as usize & (self.ring.len() - 1)
    }

    pub(super) fn push(&mut self, e: Expiry) {
        if self.len() == self.ring.len() {
            self.grow();
        }
        let at = self.at(self.tail);
        self.ring[at] = e;
        self.tail += 1;
    }

    pub(super) fn front(&self) -> Option<Expiry> {
        (!self.is_empty()).then(|| self.ring[self.at(self.head)])
    }

    /// The slot of the entry `ahead` places after the first, if queued.
    pub(super) fn slot_ahead(&self, ahead: u64) -> Option<u32> {
        let p = self.head + ahead;
        (p < self.tail).then(|| self.ring[self.at(p)].slot)
    }

    pub(super) fn pop_front(&mut self) {
        debug_assert!(!self.is_empty());
        self.head += 1;
    }

    /// The entry at position `p`, if it is still queued.
    pub(super) fn get_mut(&mut self, p: u64) -> Option<&mut Expiry> {
        if (self.head..self.tail).contains(&p) {
            let at = self.at(p);
            Some(&mut self.ring[at])
        } else {
            None
        }
    }

    /// Doubles the ring, each entry moved to its place in the new one.
    #[cold]
    fn grow(&mut self) {
        let len = (2 * self.ring.len()).max(64);
        let mut ring = vec![Expiry::default(); len];
        for p in self.head..self.tail {
            ring[p as usize & (len - 1)] = self.ring[self.at(p)];
        }
        self.ring = ring;
    }
}
