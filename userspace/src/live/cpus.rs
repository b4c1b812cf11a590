//! `live --cpus`: which CPUs rocescope's own threads may run on.
//!
//! The XDP program runs where the mirror port's frames are received: in the
//! softirq of the CPU that takes the port's receive interrupt (on a veth
//! pair, the sender's CPU). rocescope's threads (the ring drain, the
//! analyzer, the table writers) scheduled onto that CPU take time from the
//! frames' reception itself, so a capture box keeps them apart, as Zeek's
//! and Suricata's worker pinning do: the receive queues' interrupts on some
//! cores (`/proc/irq/*/smp_affinity_list`), rocescope on the others.
//!
//! The list is applied to the thread that starts the run before it starts
//! any other, so every thread of the run inherits it.
use std::fmt;

use crate::{Error, Result};

/// The CPUs of `--cpus`, e.g. `2-3,6` (the `taskset -c` and
/// `smp_affinity_list` syntax), sorted and without repeats.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuList(Vec<usize>);

/// The highest CPU number a `cpu_set_t` holds (glibc's `CPU_SETSIZE`).
const MAX_CPUS: usize = 1024;

impl CpuList {
    /// Parses `LIST`: numbers and ranges `A-B`, separated by commas.
    pub fn parse(list: &str) -> Result<Self> {
        let bad = |what: &str| {
            Error::Usage(format!(
                "--cpus {list:?}: {what}; give CPU numbers and ranges, e.g. 1 or 2-3,6 (see `lscpu` for the CPUs this machine has)"
            ))
        };
        let number = |s: &str| -> Result<usize> {
            let n: usize = s
                .trim()
                .parse()
                .map_err(|_| bad(&format!("{:?} is not a CPU number", s.trim())))?;
            if n >= MAX_CPUS {
                return Err(bad(&format!(
                    "CPU {n} is beyond the {MAX_CPUS} a CPU set holds"
                )));
            }
            Ok(n)
        };
        let mut cpus = Vec::new();
        for part in list.split(',') {
            match part.split_once('-') {
                Some((a, b)) => {
                    let (a, b) = (number(a)?, number(b)?);
                    if a > b {
                        return Err(bad(&format!("the range {a}-{b} runs backwards")));
                    }
                    cpus.extend(a..=b);
                }
                None => cpus.push(number(part)?),
            }
        }
        cpus.sort_unstable();
        cpus.dedup();
        Ok(CpuList(cpus))
    }

    pub fn cpus(&self) -> &[usize] {
        &self.0
    }

    /// Restricts the calling thread, and so every thread it starts later,
    /// to these CPUs.
    pub fn pin_current_thread(&self) -> Result<()> {
        // SAFETY: a zeroed cpu_set_t is the empty set; CPU_SET is given
        // numbers below CPU_SETSIZE only (checked in `parse`).
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        for &cpu in &self.0 {
            unsafe { libc::CPU_SET(cpu, &mut set) };
        }
        // SAFETY: pid 0 is the calling thread; `set` is a valid cpu_set_t.
        let rc =
            unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
        if rc == 0 {
            return Ok(());
        }
        let err = std::io::Error::last_os_error();
        Err(Error::Usage(format!(
            "--cpus {self}: cannot run on these CPUs ({err}); they must exist and be online, and be allowed to this process (see `lscpu` and `taskset -p $$`)"
        )))
    }
}

impl fmt::Display for CpuList {
    /// Back in the `--cpus` syntax, ranges folded: `0-2,5`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = self.0.as_slice();
        let mut sep = "";
        while let [start, ..] = rest {
            // The longest run of consecutive CPUs from `start`.
            let run = rest
                .iter()
                .enumerate()
                .take_while(|&(k, &c)| c == start + k)
                .count();
            let end = rest[run - 1];
            if run == 1 {
                write!(f, "{sep}{start}")?;
            } else {
                write!(f, "{sep}{start}-{end}")?;
            }
            sep = ",";
            rest = &rest[run..];
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_numbers_and_ranges_sorted_without_repeats() {
        assert_eq!(CpuList::parse("1").unwrap().cpus(), &[1]);
        assert_eq!(CpuList::parse("6,2-3, 3").unwrap().cpus(), &[2, 3, 6]);
        assert_eq!(CpuList::parse("0-2,5").unwrap().to_string(), "0-2,5");
        assert_eq!(CpuList::parse("4,1").unwrap().to_string(), "1,4");
    }

    #[test]
    fn bad_lists_say_what_to_give() {
        for bad in ["", "x", "3-1", "1-", "2048", "1,,2"] {
            let e = CpuList::parse(bad).unwrap_err().to_string();
            assert!(
                e.contains("--cpus") && e.contains("e.g. 1 or 2-3,6"),
                "{bad}: {e}"
            );
        }
    }
}
