//! The report's plots, drawn as SVG text with plotters' SVG backend.
//!
//! Times are milliseconds since the capture's first frame. Text is laid out
//! with plotters' built-in estimate (no font files are read) and drawn by
//! the browser in its sans-serif font, at sizes that stay legible when the
//! page scales the 1000-pixel-wide plots down to a laptop's width
//! ([`TICK_PX`], [`DESC_PX`]).
use std::error::Error as StdError;

use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use super::{Bin, FlowPoints, Mark};

fn tick_font() -> TextStyle<'static> {
    ("sans-serif", TICK_PX).into_font().color(&BLACK)
}

fn desc_font() -> TextStyle<'static> {
    ("sans-serif", DESC_PX).into_font().color(&BLACK)
}

type DrawResult = std::result::Result<(), Box<dyn StdError>>;

const WIDTH: u32 = 1000;
/// Tick labels and legends, in points: plotters writes `font-size` in SVG
/// pixels as points / 1.24, so 20 is 16 px.
pub const TICK_PX: u32 = 20;
/// Axis descriptions (18 px).
pub const DESC_PX: u32 = 22;
const BLUE: RGBColor = RGBColor(0x1f, 0x77, 0xb4);
const RED_: RGBColor = RGBColor(0xd6, 0x27, 0x28);
const PAUSE: RGBColor = RGBColor(0xff, 0xa5, 0x00);
const PALETTE: [RGBColor; 6] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
];

/// Draws on a `w`×`h` SVG and returns it, ready to inline in HTML5 (the
/// namespace attribute, a URL that is never fetched, is left out).
fn svg(
    w: u32,
    h: u32,
    draw: impl FnOnce(&DrawingArea<SVGBackend<'_>, Shift>) -> DrawResult,
) -> Result<String, String> {
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (w, h)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        draw(&root).map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(buf.replace(" xmlns=\"http://www.w3.org/2000/svg\"", ""))
}

type TimeChart<'a, 'b> =
    ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// A chart with ms since the capture's start on x and `y_desc` on y, the
/// mesh drawn with legible labels.
fn time_chart<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, Shift>,
    x: std::ops::Range<f64>,
    y: std::ops::Range<f64>,
    y_desc: impl Into<String>,
) -> std::result::Result<TimeChart<'a, 'b>, Box<dyn StdError>> {
    let mut chart = ChartBuilder::on(root)
        .margin(12)
        .margin_right(36)
        .x_label_area_size(56)
        .y_label_area_size(76)
        .build_cartesian_2d(x, y)?;
    chart
        .configure_mesh()
        .x_desc("ms since capture start")
        .y_desc(y_desc)
        .label_style(tick_font())
        .axis_desc_style(desc_font())
        .light_line_style(WHITE.mix(0.0))
        .draw()?;
    Ok(chart)
}

/// The series' labels, top right.
fn legend<'a, 'b: 'a>(chart: &mut TimeChart<'a, 'b>) -> DrawResult {
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .label_font(tick_font())
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .draw()?;
    Ok(())
}

fn ms(ts_ns: u64, t0: u64) -> f64 {
    ts_ns.saturating_sub(t0) as f64 / 1e6
}

/// Pause intervals within `[lo, hi]` ms, merged where closer than a pixel
/// would show (so a storm of short pauses stays a few rectangles).
fn shaded(pauses: &[(u64, u64)], t0: u64, lo: f64, hi: f64) -> Vec<(f64, f64)> {
    let mut v: Vec<(f64, f64)> = pauses
        .iter()
        .map(|&(s, e)| (ms(s, t0).max(lo), ms(e, t0).min(hi)))
        .filter(|(s, e)| e > s)
        .collect();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    let gap = (hi - lo) / 2000.0;
    let mut out: Vec<(f64, f64)> = Vec::with_capacity(v.len());
    for (s, e) in v {
        match out.last_mut() {
            Some(last) if s <= last.1 + gap => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

fn padded(lo: f64, hi: f64) -> (f64, f64) {
    let span = (hi - lo).abs().max(1e-9);
    (lo - span * 0.02, hi + span * 0.02)
}

/// PSN over time (the tcptrace picture) over `[from, to]` (capture
/// nanoseconds): first sends, retransmissions, rewinds, and the flow's
/// paused intervals shaded.
pub fn psn(
    flow: &FlowPoints,
    pauses: &[(u64, u64)],
    t0: u64,
    (from, to): (u64, u64),
) -> Result<String, String> {
    let pts = &flow.points;
    let (mut y0, mut y1) = (i64::MAX, i64::MIN);
    for p in pts {
        y0 = y0.min(p.psn);
        y1 = y1.max(p.psn);
    }
    let (x0, x1) = padded(ms(from, t0), ms(to, t0));
    let (y0, y1) = padded(y0 as f64, y1 as f64);
    let shade = shaded(pauses, t0, x0, x1);
    svg(WIDTH, 420, |root| {
        let mut chart = ChartBuilder::on(root)
            .margin(12)
            .margin_right(36)
            .x_label_area_size(56)
            .y_label_area_size(84)
            .build_cartesian_2d(x0..x1, y0..y1)?;
        chart
            .configure_mesh()
            .x_desc("ms since capture start")
            .y_desc(format!("PSN − {}", flow.first_psn))
            .y_label_formatter(&|v| format!("{v:.0}"))
            .label_style(tick_font())
            .axis_desc_style(desc_font())
            .light_line_style(WHITE.mix(0.0))
            .draw()?;
        chart
            .draw_series(
                shade
                    .iter()
                    .map(|&(s, e)| Rectangle::new([(s, y0), (e, y1)], PAUSE.mix(0.25).filled())),
            )?
            .label("PFC paused")
            .legend(|(x, y)| {
                Rectangle::new([(x, y - 5), (x + 12, y + 5)], PAUSE.mix(0.4).filled())
            });
        let of = |m: Mark| pts.iter().filter(move |p| p.mark == m);
        chart
            .draw_series(
                of(Mark::Original)
                    .map(|p| Circle::new((ms(p.ts_ns, t0), p.psn as f64), 1, BLUE.filled())),
            )?
            .label("first transmission")
            .legend(|(x, y)| Circle::new((x + 6, y), 3, BLUE.filled()));
        chart
            .draw_series(
                of(Mark::Retrans)
                    .map(|p| Circle::new((ms(p.ts_ns, t0), p.psn as f64), 2, RED_.filled())),
            )?
            .label("retransmission")
            .legend(|(x, y)| Circle::new((x + 6, y), 3, RED_.filled()));
        chart
            .draw_series(
                of(Mark::Rewind).map(|p| {
                    TriangleMarker::new((ms(p.ts_ns, t0), p.psn as f64), 6, BLACK.filled())
                }),
            )?
            .label("Go-Back-N rewind")
            .legend(|(x, y)| TriangleMarker::new((x + 6, y), 5, BLACK.filled()));
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .label_font(tick_font())
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.3))
            .draw()?;
        Ok(())
    })
}

/// Gb/s sent per flow over the capture, `width_ns`-wide bins (every bin
/// from the first to the last, empty ones at 0), pauses shaded.
pub fn throughput(
    series: &[(String, Vec<(u64, Bin)>)],
    width_ns: u64,
    pauses: &[(u64, u64)],
    t0: u64,
    t1: u64,
) -> Result<String, String> {
    let (x0, x1) = padded(0.0, ms(t1, t0));
    let gbps = |bits: f64| bits / width_ns.max(1) as f64;
    let ymax = series
        .iter()
        .flat_map(|(_, s)| s.iter().map(|(_, b)| gbps(b.bits)))
        .fold(0.0f64, f64::max)
        .max(1e-3)
        * 1.1;
    let shade = shaded(pauses, t0, x0, x1);
    svg(WIDTH, 360, |root| {
        let y_desc = format!("Gb/s per {}", crate::render::fmt_duration(width_ns));
        let mut chart = time_chart(root, x0..x1, 0.0..ymax, y_desc)?;
        chart
            .draw_series(
                shade
                    .iter()
                    .map(|&(s, e)| Rectangle::new([(s, 0.0), (e, ymax)], PAUSE.mix(0.2).filled())),
            )?
            .label("PFC paused (any port)")
            .legend(|(x, y)| {
                Rectangle::new([(x, y - 5), (x + 12, y + 5)], PAUSE.mix(0.4).filled())
            });
        let half = width_ns as f64 / 2.0;
        for (i, (name, s)) in series.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            chart
                .draw_series(LineSeries::new(
                    s.iter()
                        .map(|(k, b)| (ms(*k, t0) + half / 1e6, gbps(b.bits))),
                    color.stroke_width(2),
                ))?
                .label(name.as_str())
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 14, y)], color.stroke_width(2))
                });
        }
        legend(&mut chart)
    })
}

/// CE-marked packets and CNPs per `width`-wide bin, summed over flows.
pub fn ce_cnp(sum: &[(u64, Bin)], width: u64, t0: u64, t1: u64) -> Result<String, String> {
    let (x0, x1) = padded(0.0, ms(t1, t0));
    let ymax = sum
        .iter()
        .map(|(_, b)| b.ce.max(b.cnps))
        .max()
        .unwrap_or(1)
        .max(1) as f64
        * 1.1;
    let half = width as f64 / 2e6;
    svg(WIDTH, 300, |root| {
        let y_desc = format!("per {}", crate::render::fmt_duration(width));
        let mut chart = time_chart(root, x0..x1, 0.0..ymax, y_desc)?;
        let orange = RGBColor(0xe6, 0x7e, 0x22);
        let green = RGBColor(0x2c, 0xa0, 0x2c);
        chart
            .draw_series(LineSeries::new(
                sum.iter().map(|(k, b)| (ms(*k, t0) + half, b.ce as f64)),
                orange.stroke_width(2),
            ))?
            .label("CE-marked packets")
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 14, y)], orange.stroke_width(2)));
        chart
            .draw_series(LineSeries::new(
                sum.iter().map(|(k, b)| (ms(*k, t0) + half, b.cnps as f64)),
                green.stroke_width(2),
            ))?
            .label("CNPs")
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 14, y)], green.stroke_width(2)));
        legend(&mut chart)
    })
}

/// A chart of `rows` labelled rows (no y axis) over `x`, described `x_desc`.
fn row_chart<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, Shift>,
    x: std::ops::Range<f64>,
    rows: usize,
    x_desc: &str,
) -> std::result::Result<TimeChart<'a, 'b>, Box<dyn StdError>> {
    let mut chart = ChartBuilder::on(root)
        .margin(12)
        .margin_right(36)
        .x_label_area_size(56)
        .y_label_area_size(10)
        .build_cartesian_2d(x, 0.0..rows as f64)?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .label_style(tick_font())
        .axis_desc_style(desc_font())
        .disable_y_mesh()
        .disable_y_axis()
        .light_line_style(WHITE.mix(0.0))
        .draw()?;
    Ok(chart)
}

/// Horizontal bars: paused fraction per port and priority, labelled.
pub fn pause_fraction(bars: &[(String, f64)]) -> Result<String, String> {
    let n = bars.len().max(1);
    let h = 90 + 34 * n as u32;
    svg(WIDTH, h, |root| {
        let mut chart = row_chart(root, 0.0..100.0, n, "% of the capture paused")?;
        let y = |i: usize| (n - 1 - i) as f64;
        chart.draw_series(bars.iter().enumerate().map(|(i, (_, f))| {
            Rectangle::new(
                [
                    (0.0, y(i) + 0.15),
                    ((f * 100.0).clamp(0.0, 100.0), y(i) + 0.85),
                ],
                PAUSE.mix(0.8).filled(),
            )
        }))?;
        let style = tick_font();
        chart.draw_series(bars.iter().enumerate().map(|(i, (name, f))| {
            // Inside a long bar's left end, else just after a short one.
            let pct = f * 100.0;
            let x = if pct > 60.0 { 1.0 } else { pct + 1.0 };
            Text::new(
                format!("{name} — {pct:.2} %"),
                (x, y(i) + 0.7),
                style.clone(),
            )
        }))?;
        Ok(())
    })
}

/// A named line of flat steps: `(from_ns, to_ns, value)`.
pub type StepLine = (String, Vec<(u64, u64, f64)>);

/// Counter rates as flat steps over the intervals between snapshots,
/// clipped to the capture's time axis, pauses shaded.
pub fn steps(
    lines: &[StepLine],
    pauses: &[(u64, u64)],
    t0: u64,
    t1: u64,
    y_desc: &str,
) -> Result<String, String> {
    let (x0, x1) = padded(0.0, ms(t1, t0));
    let clip = |&(a, b, v): &(u64, u64, f64)| {
        let (a, b) = (ms(a.max(t0), t0), ms(b.min(t1), t0));
        (b > a).then_some((a, b, v))
    };
    let ymax = lines
        .iter()
        .flat_map(|(_, s)| s.iter().filter_map(clip).map(|(_, _, v)| v))
        .fold(0.0, f64::max)
        .max(1e-9)
        * 1.15;
    svg(WIDTH, 260, |root| {
        let mut chart = time_chart(root, x0..x1, 0.0..ymax, y_desc)?;
        chart.draw_series(
            shaded(pauses, t0, x0, x1)
                .into_iter()
                .map(|(s, e)| Rectangle::new([(s, 0.0), (e, ymax)], PAUSE.mix(0.18).filled())),
        )?;
        for (i, (name, steps)) in lines.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            chart
                .draw_series(steps.iter().filter_map(clip).map(|(a, b, v)| {
                    PathElement::new(vec![(a, v), (b, v)], color.stroke_width(2))
                }))?
                .label(name.as_str())
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 14, y)], color.stroke_width(2))
                });
        }
        legend(&mut chart)
    })
}

/// One port of a congestion tree: its label, its first pause and its
/// paused intervals, in µs since the root's first pause.
pub struct TreeRow {
    pub label: String,
    pub onset_us: f64,
    pub paused_us: Vec<(f64, f64)>,
}

/// A congestion tree on one time axis: a row per port (pauses as bars, the
/// first pause marked), an arrow from each port's parent's first pause to
/// its own, labelled with the delay. `arrows` are `(parent row, row,
/// label)`; the axis spans `0..span_us`, bars running past it are cut.
pub fn tree(
    rows: &[TreeRow],
    arrows: &[(usize, usize, String)],
    span_us: f64,
) -> Result<String, String> {
    let n = rows.len().max(1);
    let h = 110 + 70 * n as u32;
    let (x0, x1) = padded(0.0, span_us.max(1e-3));
    svg(WIDTH, h, |root| {
        let mut chart = row_chart(root, x0..x1, n, "µs since the root's first pause")?;
        let y = |i: usize| (n - 1 - i) as f64;
        for (i, r) in rows.iter().enumerate() {
            chart.draw_series(r.paused_us.iter().filter_map(|&(a, b)| {
                let (a, b) = (a.max(x0), b.min(x1));
                (b > a).then(|| {
                    Rectangle::new([(a, y(i) + 0.2), (b, y(i) + 0.5)], PAUSE.mix(0.8).filled())
                })
            }))?;
            chart.draw_series([Circle::new((r.onset_us, y(i) + 0.35), 6, RED_.filled())])?;
            chart.draw_series([Text::new(
                r.label.clone(),
                (x0 + (x1 - x0) * 0.005, y(i) + 0.88),
                tick_font(),
            )])?;
        }
        // An arrowhead a few pixels long whatever the axes' scales.
        let (px_x, px_y) = ((x1 - x0) / 900.0, n as f64 / (h as f64 - 80.0));
        for (from, to, label) in arrows {
            let (Some(a), Some(b)) = (rows.get(*from), rows.get(*to)) else {
                continue;
            };
            // Along the parent's row to the step's onset, then down to it:
            // the arrow crosses no other row's bars.
            let start = (a.onset_us, y(*from) + 0.35);
            let corner = (b.onset_us, start.1);
            let end = (b.onset_us, y(*to) + 0.35);
            chart.draw_series([PathElement::new(
                vec![start, corner, end],
                BLUE.stroke_width(2),
            )])?;
            let (dx, dy) = ((end.0 - corner.0) / px_x, (end.1 - corner.1) / px_y);
            let len = (dx * dx + dy * dy).sqrt().max(1e-9);
            let (ux, uy) = (dx / len, dy / len);
            let back = |side: f64| {
                (
                    end.0 - (ux * 14.0 - uy * side) * px_x,
                    end.1 - (uy * 14.0 + ux * side) * px_y,
                )
            };
            chart.draw_series([Polygon::new(
                vec![end, back(6.0), back(-6.0)],
                BLUE.filled(),
            )])?;
            chart.draw_series([Text::new(
                label.clone(),
                (end.0 + 10.0 * px_x, end.1 - 0.02),
                tick_font().color(&BLUE),
            )])?;
        }
        Ok(())
    })
}
