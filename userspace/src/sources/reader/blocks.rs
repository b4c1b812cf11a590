//! What each block or record holds: a frame (its interface, timestamp and
//! captured bytes located in the buffer), a section or interface to note,
//! drop counters, or something to skip or stop at.
use pcap_parser::{
    Block, InterfaceDescriptionBlock, LegacyPcapBlock, OptionCode, PcapBlockOwned, PcapHeader,
    SimplePacketBlock, UnknownBlock,
};

use super::in_place::EpbHeader;
use super::state::{Meta, State, Step};
use super::timestamps::{NS_PER_SEC, TsScale, scale_ts, ts_units};
use super::{Interface, InterfaceDrops, MAX_CAPLEN, MAX_INTERFACES, PB_TYPE};

impl State {
    pub(super) fn on_pcap_header(&mut self, h: &PcapHeader) {
        self.legacy_ns = h.is_nanosecond_precision();
        self.legacy_modified = h.is_modified_format();
        self.section_be = h.is_bigendian();
        // The upper bits of the link-type field carry FCS information.
        self.interfaces.push(Interface {
            name: None,
            linktype: (h.network.0 as u32) & 0xFFFF,
            snaplen: h.snaplen,
            drops: None,
        });
        self.scales.push(TsScale {
            units: if self.legacy_ns {
                NS_PER_SEC
            } else {
                1_000_000
            },
            offset_s: 0,
        });
    }

    pub(super) fn on_block(&mut self, len: usize, block: &PcapBlockOwned<'_>, base: usize) -> Step {
        match block {
            PcapBlockOwned::LegacyHeader(h) => {
                if self.interfaces.is_empty() {
                    self.on_pcap_header(h);
                }
                Step::Consume(len)
            }
            PcapBlockOwned::Legacy(b) => self.on_legacy(len, b, base),
            PcapBlockOwned::NG(Block::SectionHeader(shb)) => {
                self.section_base = self.interfaces.len();
                self.section_be = shb.big_endian();
                Step::Consume(len)
            }
            PcapBlockOwned::NG(Block::InterfaceDescription(idb)) => self.on_idb(len, idb),
            PcapBlockOwned::NG(Block::EnhancedPacket(epb)) => {
                let hdr =
                    EpbHeader::new(epb.if_id, epb.ts_high, epb.ts_low, epb.caplen, epb.origlen);
                let caplen = (epb.caplen as usize).min(epb.data.len());
                self.on_epb(len, &hdr, &epb.data[..caplen], base)
            }
            PcapBlockOwned::NG(Block::SimplePacket(spb)) => self.on_spb(len, spb, base),
            PcapBlockOwned::NG(Block::InterfaceStatistics(isb)) => {
                self.on_isb(isb);
                Step::Consume(len)
            }
            PcapBlockOwned::NG(Block::Unknown(ub)) => {
                let btype = if self.section_be {
                    ub.block_type.swap_bytes()
                } else {
                    ub.block_type
                };
                if btype == PB_TYPE {
                    self.on_pb(len, ub, base)
                } else {
                    Step::Consume(len)
                }
            }
            PcapBlockOwned::NG(_) => Step::Consume(len),
        }
    }

    fn frame_step(
        &mut self,
        len: usize,
        data: &[u8],
        base: usize,
        iface: usize,
        ts_ns: u64,
        orig_len: u32,
    ) -> Step {
        let caplen = data.len();
        let Some(start) = (data.as_ptr() as usize).checked_sub(base) else {
            self.stop("internal error locating the frame".into());
            return Step::Stop;
        };
        let Interface {
            linktype, snaplen, ..
        } = self.interfaces[iface];
        if snaplen != 0 && caplen > snaplen as usize && !self.snaplen_warned {
            self.snaplen_warned = true;
            self.warn(
                self.pos,
                format!(
                    "frame {}: {caplen} bytes captured, more than the interface's snaplen {snaplen}; kept them all (reported once per file)",
                    self.number
                ),
            );
        }
        Step::Frame {
            len,
            start,
            caplen,
            meta: Meta {
                number: self.number,
                iface: iface as u32,
                ts_ns,
                linktype,
                orig_len,
            },
        }
    }

    pub(super) fn on_legacy(&mut self, len: usize, b: &LegacyPcapBlock<'_>, base: usize) -> Step {
        self.number += 1;
        if b.caplen > MAX_CAPLEN {
            self.stop(format!(
                "packet record claims {} captured bytes, more than the {MAX_CAPLEN} any capture tool writes: the file is damaged",
                b.caplen
            ));
            return Step::Stop;
        }
        let frac_ns = if self.legacy_ns {
            u64::from(b.ts_usec)
        } else {
            u64::from(b.ts_usec) * 1000
        };
        let ts_ns = u64::from(b.ts_sec) * NS_PER_SEC + frac_ns;
        if self.interfaces.is_empty() {
            self.stop("packet record before the file header".into());
            return Step::Stop;
        }
        self.frame_step(len, b.data, base, 0, ts_ns, b.origlen)
    }

    /// An Interface Statistics Block: its drop counters replace the
    /// interface's earlier ones (they count from the capture's start). An
    /// ISB for an undeclared interface, or a counter that does not parse, is
    /// left out.
    fn on_isb(&mut self, isb: &pcap_parser::pcapng::InterfaceStatisticsBlock<'_>) {
        // pcap-parser reads the option as little-endian whatever the
        // section's byte order.
        let be = self.section_be;
        let value = |v: Option<Result<u64, _>>| {
            v.and_then(Result::ok)
                .map(|x: u64| if be { x.swap_bytes() } else { x })
        };
        let drops = InterfaceDrops {
            ifdrop: value(isb.isb_ifdrop()),
            osdrop: value(isb.isb_osdrop()),
        };
        if drops == InterfaceDrops::default() {
            return;
        }
        let index = self.section_base.saturating_add(isb.if_id as usize);
        if let Some(i) = self.interfaces.get_mut(index) {
            i.drops = Some(drops);
        }
    }

    fn on_idb(&mut self, len: usize, idb: &InterfaceDescriptionBlock<'_>) -> Step {
        if self.interfaces.len() >= MAX_INTERFACES {
            self.stop(format!(
                "more than {MAX_INTERFACES} interface description blocks: the file is damaged"
            ));
            return Step::Stop;
        }
        let mut name = None;
        let mut resol = 6u8;
        let mut offset_s = 0i64;
        for opt in &idb.options {
            let Ok(v) = opt.as_bytes() else { continue };
            match opt.code {
                OptionCode::IfName => {
                    let s = String::from_utf8_lossy(v);
                    name = Some(s.trim_end_matches('\0').to_string());
                }
                OptionCode::IfTsresol => {
                    if let Some(&r) = v.first() {
                        resol = r;
                    }
                }
                OptionCode::IfTsoffset => {
                    if let Ok(b) = <[u8; 8]>::try_from(v) {
                        offset_s = if self.section_be {
                            i64::from_be_bytes(b)
                        } else {
                            i64::from_le_bytes(b)
                        };
                    }
                }
                _ => {}
            }
        }
        let index = self.interfaces.len();
        let units = match ts_units(resol) {
            Some(u) if u > 0 => u,
            _ => {
                self.warn(
                    self.pos,
                    format!(
                        "interface {index}: if_tsresol {resol:#04x} is no usable resolution; took its timestamps as microseconds"
                    ),
                );
                1_000_000
            }
        };
        self.interfaces.push(Interface {
            name,
            linktype: (idb.linktype.0 as u32) & 0xFFFF,
            snaplen: idb.snaplen,
            drops: None,
        });
        self.scales.push(TsScale { units, offset_s });
        Step::Consume(len)
    }

    /// Section-local interface id to file-wide index, or a skip warning.
    fn iface_index(&mut self, if_id: u32, what: &str) -> Option<usize> {
        let in_section = self.interfaces.len() - self.section_base;
        if (if_id as usize) < in_section {
            Some(self.section_base + if_id as usize)
        } else {
            self.warn(
                self.pos,
                format!(
                    "frame {}: {what} names interface {if_id}, but its section declares {in_section}; skipped that frame",
                    self.number
                ),
            );
            None
        }
    }

    fn oversized(&mut self, caplen: u32) -> bool {
        if caplen > MAX_CAPLEN {
            self.warn(
                self.pos,
                format!(
                    "frame {}: {caplen} captured bytes, more than the {MAX_CAPLEN} any capture tool writes; skipped that frame",
                    self.number
                ),
            );
            true
        } else {
            false
        }
    }

    fn timestamp(&self, ts: u64, iface: usize) -> Option<u64> {
        scale_ts(ts, *self.scales.get(iface)?)
    }

    /// A pcapng timestamp that is no time since 1970 in u64 nanoseconds:
    /// an error (saturating would put the frame at a made-up time).
    fn bad_timestamp(&self, ts: u64, iface: usize) -> Step {
        let scale = self.scales.get(iface).copied().unwrap_or(TsScale {
            units: 1_000_000,
            offset_s: 0,
        });
        let name = self
            .interfaces
            .get(iface)
            .and_then(|i| i.name.as_deref())
            .map(|n| format!(" {n:?}"))
            .unwrap_or_default();
        Step::Fatal(format!(
            "frame {} (interface {iface}{name}): timestamp {ts} at {} units per second plus if_tsoffset {} s is before 1970 or after 2554, which no capture can be: the interface's if_tsresol or if_tsoffset is wrong; fix them (e.g. rewrite the file with editcap) or capture again",
            self.number, scale.units, scale.offset_s
        ))
    }

    pub(super) fn on_epb(&mut self, len: usize, hdr: &EpbHeader, data: &[u8], base: usize) -> Step {
        self.number += 1;
        let Some(iface) = self.iface_index(hdr.if_id, "enhanced packet block") else {
            return Step::Consume(len);
        };
        if self.oversized(hdr.caplen) {
            return Step::Consume(len);
        }
        let Some(ts_ns) = self.timestamp(hdr.ts, iface) else {
            return self.bad_timestamp(hdr.ts, iface);
        };
        self.frame_step(len, data, base, iface, ts_ns, hdr.origlen)
    }

    fn on_spb(&mut self, len: usize, spb: &SimplePacketBlock<'_>, base: usize) -> Step {
        self.number += 1;
        let Some(iface) = self.iface_index(0, "simple packet block") else {
            return Step::Consume(len);
        };
        let snaplen = self.interfaces[iface].snaplen;
        let mut caplen = (spb.origlen as usize).min(spb.data.len());
        if snaplen != 0 {
            caplen = caplen.min(snaplen as usize);
        }
        if self.oversized(caplen as u32) {
            return Step::Consume(len);
        }
        // An SPB carries no timestamp: it gets the previous frame's.
        let ts_ns = self.last_ts;
        self.frame_step(len, &spb.data[..caplen], base, iface, ts_ns, spb.origlen)
    }

    /// Obsolete Packet Block (type 2): iface u16, drops u16, ts high, ts
    /// low, caplen, origlen, data, options.
    fn on_pb(&mut self, len: usize, ub: &UnknownBlock<'_>, base: usize) -> Step {
        self.number += 1;
        let body = ub.data;
        let be = self.section_be;
        let u32_at = |at: usize| -> u32 {
            let b: [u8; 4] = body[at..at + 4].try_into().unwrap_or([0; 4]);
            if be {
                u32::from_be_bytes(b)
            } else {
                u32::from_le_bytes(b)
            }
        };
        if body.len() < 20 {
            self.warn(
                self.pos,
                format!(
                    "frame {}: packet block too short for its header; skipped that frame",
                    self.number
                ),
            );
            return Step::Consume(len);
        }
        let if_id = {
            let b = [body[0], body[1]];
            if be {
                u16::from_be_bytes(b)
            } else {
                u16::from_le_bytes(b)
            }
        };
        let (ts_high, ts_low, caplen, origlen) = (u32_at(4), u32_at(8), u32_at(12), u32_at(16));
        let Some(iface) = self.iface_index(u32::from(if_id), "packet block") else {
            return Step::Consume(len);
        };
        if self.oversized(caplen) {
            return Step::Consume(len);
        }
        let Some(data) = body.get(20..20 + caplen as usize) else {
            self.warn(
                self.pos,
                format!(
                    "frame {}: packet block's captured length {caplen} overruns the block; skipped that frame",
                    self.number
                ),
            );
            return Step::Consume(len);
        };
        let ts = (u64::from(ts_high) << 32) | u64::from(ts_low);
        let Some(ts_ns) = self.timestamp(ts, iface) else {
            return self.bad_timestamp(ts, iface);
        };
        self.frame_step(len, data, base, iface, ts_ns, origlen)
    }
}
