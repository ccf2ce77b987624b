//! Drawing the report's plots (issue #4: the performance profile and FastLoad-style Figs. 7, 8
//! and 10) as SVG and PNG with `plotters`.
//!
//! The report maths in [`super::report`] reduces the data to a [`Chart`]: a title, axis labels,
//! linear or logarithmic axes and named series of points. This module only renders: one
//! colour and one marker per series (a distinct pair for every series), a legend panel to the
//! right of the plot (a second column beyond 20 entries, the image widening to hold it), an
//! optional dashed horizontal reference line (speedup 1) and an optional dashed diagonal y = x
//! (time against its limit). Text is set in DejaVu Sans, embedded in the binary and
//! registered with `plotters`' `ab_glyph` font table, so no system font is needed.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plotters::coord::ranged1d::ValueFormatter;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::error::{Error, Result};

/// Runs `$body` with `$mk` bound to a closure that makes the marker of series `$i` at a point:
/// eight shapes (filled, then hollow). Colours cycle with a period of 30 and shapes with a period of
/// 8, so the first 30 series have distinct colours and colour and shape together stay unique for
/// 120 series. A macro because each shape is its own element type.
macro_rules! with_marker {
    ($i:expr, $col:expr, |$mk:ident| $body:expr) => {{
        let fill = $col.filled();
        let line = $col.stroke_width(2);
        let thick = $col.stroke_width(3);
        match $i % 8 {
            0 => {
                let $mk = move |p| EmptyElement::at(p) + Circle::new((0, 0), 6, fill);
                $body
            }
            1 => {
                let $mk = move |p| EmptyElement::at(p) + TriangleMarker::new((0, 0), 8, fill);
                $body
            }
            2 => {
                let $mk = move |p| EmptyElement::at(p) + Rectangle::new([(-5, -5), (5, 5)], fill);
                $body
            }
            3 => {
                let $mk = move |p| EmptyElement::at(p) + Cross::new((0, 0), 6, thick);
                $body
            }
            4 => {
                let $mk = move |p| {
                    EmptyElement::at(p) + Polygon::new(vec![(0, -7), (7, 0), (0, 7), (-7, 0)], fill)
                };
                $body
            }
            5 => {
                let $mk = move |p| EmptyElement::at(p) + Circle::new((0, 0), 6, line);
                $body
            }
            6 => {
                let $mk = move |p| EmptyElement::at(p) + TriangleMarker::new((0, 0), 8, line);
                $body
            }
            _ => {
                let $mk = move |p| EmptyElement::at(p) + Rectangle::new([(-5, -5), (5, 5)], line);
                $body
            }
        }
    }};
}

/// DejaVu Sans (Bitstream Vera licence; see `assets/DejaVuSans-LICENSE.txt`).
static FONT: &[u8] = include_bytes!("../../assets/DejaVuSans.ttf");

/// The family name every text style in the plots uses.
const FAMILY: &str = "sans-serif";

/// Image size in pixels (PNG) or user units (SVG) with a one-column legend; a chart with more
/// than [`LEGEND_ROWS`] series gets a second legend column, and the image grows by its width.
pub const SIZE: (u32, u32) = (1280, 760);

/// Width of one legend column on the right.
const LEGEND_WIDTH: u32 = 300;

/// Most legend entries in one column (more would shrink the text below readability).
pub const LEGEND_ROWS: usize = 20;

/// Legend columns for `entries` entries.
fn legend_columns(entries: usize) -> usize {
    entries.div_ceil(LEGEND_ROWS).max(1)
}

/// The image size of a chart: wider by one legend column per extra column.
pub fn size_of(chart: &Chart) -> (u32, u32) {
    let entries = chart.legend_entries();
    let extra = (legend_columns(entries) - 1) as u32 * LEGEND_WIDTH;
    (SIZE.0 + extra, SIZE.1)
}

/// Registers the embedded font once per process.
fn ensure_font() -> Result<()> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED
        .get_or_init(|| plotters::style::register_font(FAMILY, FontStyle::Normal, FONT).is_ok());
    if ok {
        Ok(())
    } else {
        Err(Error::Report(
            "the embedded DejaVu Sans font could not be loaded".into(),
        ))
    }
}

/// How a chart's series are drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// Lines through the points, with a marker every few points (performance profiles).
    Lines,
    /// One marker per point (scatter plots).
    Points,
}

/// One named series.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub label: String,
    /// Picks the colour and marker: give a method the same index in every plot.
    pub style: usize,
    pub points: Vec<(f64, f64)>,
}

/// Everything needed to draw one plot.
#[derive(Clone, Debug, PartialEq)]
pub struct Chart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub x_log: bool,
    pub y_log: bool,
    /// Axis ranges (positive for a logarithmic axis).
    pub x_range: (f64, f64),
    pub y_range: (f64, f64),
    pub style: Style,
    pub series: Vec<Series>,
    /// A dashed horizontal reference line at this y (speedup 1) and its legend text.
    pub hline: Option<(f64, String)>,
    /// A dashed diagonal reference line y = x (time against its limit) and its legend text.
    pub diagonal: Option<String>,
}

impl Chart {
    /// Legend entries: the series and the reference lines.
    fn legend_entries(&self) -> usize {
        self.series.len() + usize::from(self.hline.is_some()) + usize::from(self.diagonal.is_some())
    }
}

/// A range covering `values` with some padding: whole decades on a log axis (non-positive values
/// are ignored), a fraction of the span on a linear one. `fallback` when there is nothing to cover.
pub fn auto_range(
    values: impl IntoIterator<Item = f64>,
    log: bool,
    fallback: (f64, f64),
) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values {
        if v.is_finite() && (!log || v > 0.0) {
            lo = lo.min(v);
            hi = hi.max(v);
        }
    }
    if lo > hi {
        return fallback;
    }
    if log {
        // Whole decades, widened a hair so that rounding keeps both end ticks labelled.
        (
            10f64.powf((lo / 1.2).log10().floor()) * 0.999,
            10f64.powf((hi * 1.2).log10().ceil()) * 1.001,
        )
    } else {
        let pad = if hi > lo {
            0.06 * (hi - lo)
        } else {
            0.5_f64.max(0.1 * hi.abs())
        };
        (lo - pad, hi + pad)
    }
}

/// Renders `chart` to `<stem>.svg` and `<stem>.png`; returns both paths.
pub fn render(chart: &Chart, stem: &Path) -> Result<Vec<PathBuf>> {
    ensure_font()?;
    let name = stem
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let svg = stem.with_file_name(format!("{name}.svg"));
    let png = stem.with_file_name(format!("{name}.png"));
    let fail = |path: &Path, e: &dyn std::fmt::Display| {
        Error::Report(format!("drawing {}: {e}", path.display()))
    };
    let size = size_of(chart);
    {
        let root = SVGBackend::new(&svg, size).into_drawing_area();
        draw(&root, chart).map_err(|e| fail(&svg, &e))?;
        root.present().map_err(|e| fail(&svg, &e))?;
    }
    {
        let root = BitMapBackend::new(&png, size).into_drawing_area();
        draw(&root, chart).map_err(|e| fail(&png, &e))?;
        root.present().map_err(|e| fail(&png, &e))?;
    }
    Ok(vec![svg, png])
}

type DrawResult<DB> =
    std::result::Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, c: &Chart) -> DrawResult<DB> {
    root.fill(&WHITE)?;
    let root = root.margin(14, 0, 0, 0);
    let root = root.titled(&c.title, (FAMILY, 30).into_font().color(&BLACK))?;
    let width = root.dim_in_pixel().0;
    let entries = c.legend_entries();
    let legend_width = LEGEND_WIDTH * legend_columns(entries) as u32;
    let (plot, legend) = root.split_horizontally(width.saturating_sub(legend_width));
    let mut b = ChartBuilder::on(&plot);
    b.margin(18).x_label_area_size(70).y_label_area_size(95);
    let (x0, x1) = c.x_range;
    let (y0, y1) = c.y_range;
    match (c.x_log, c.y_log) {
        (false, false) => plot_into(b.build_cartesian_2d(x0..x1, y0..y1)?, c)?,
        (true, false) => plot_into(b.build_cartesian_2d((x0..x1).log_scale(), y0..y1)?, c)?,
        (false, true) => plot_into(b.build_cartesian_2d(x0..x1, (y0..y1).log_scale())?, c)?,
        (true, true) => plot_into(
            b.build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale())?,
            c,
        )?,
    }
    draw_legend(&legend, c)
}

fn plot_into<DB, X, Y>(
    mut chart: ChartContext<'_, DB, Cartesian2d<X, Y>>,
    c: &Chart,
) -> DrawResult<DB>
where
    DB: DrawingBackend,
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let tick = |v: &f64| fmt_tick(*v);
    chart
        .configure_mesh()
        .x_desc(c.x_label.as_str())
        .y_desc(c.y_label.as_str())
        .x_labels(12)
        .y_labels(12)
        .x_label_formatter(&tick)
        .y_label_formatter(&tick)
        .label_style((FAMILY, 18))
        .axis_desc_style((FAMILY, 21))
        .bold_line_style(RGBColor(215, 215, 215))
        .light_line_style(RGBColor(242, 242, 242))
        .draw()?;
    if let Some((h, _)) = c.hline {
        let (x0, x1) = c.x_range;
        chart.draw_series(DashedLineSeries::new(
            vec![(x0, h), (x1, h)],
            12,
            8,
            BLACK.stroke_width(2),
        ))?;
    }
    if c.diagonal.is_some() {
        let lo = c.x_range.0.max(c.y_range.0);
        let hi = c.x_range.1.min(c.y_range.1);
        if lo < hi {
            chart.draw_series(DashedLineSeries::new(
                vec![(lo, lo), (hi, hi)],
                12,
                8,
                BLACK.stroke_width(2),
            ))?;
        }
    }
    let n = c.series.len().max(1);
    for (k, s) in c.series.iter().enumerate() {
        let i = s.style;
        let col = color(i);
        match c.style {
            Style::Lines => {
                chart.draw_series(LineSeries::new(
                    s.points.iter().copied(),
                    col.stroke_width(3),
                ))?;
                // Markers every `stride` points, shifted per series so overlapping lines stay
                // distinguishable.
                let stride = (s.points.len() / 8).max(1);
                let phase = k * stride / n;
                let marked = s
                    .points
                    .iter()
                    .enumerate()
                    .filter(|(k, _)| k % stride == phase % stride || *k + 1 == s.points.len())
                    .map(|(_, &p)| p);
                with_marker!(i, col, |mk| {
                    chart.draw_series(marked.map(mk))?;
                });
            }
            Style::Points => {
                with_marker!(i, col, |mk| {
                    chart.draw_series(s.points.iter().map(|&p| mk(p)))?;
                });
            }
        }
    }
    Ok(())
}

fn draw_legend<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, c: &Chart) -> DrawResult<DB> {
    // Columns of at most LEGEND_ROWS entries, filled top to bottom, left to right.
    let entries = c.legend_entries();
    let columns = legend_columns(entries);
    let rows = entries.div_ceil(columns).max(1) as i32;
    let height = area.dim_in_pixel().1 as i32;
    let step = ((height - 60) / rows).clamp(16, 32);
    let size = (step - 6).clamp(13, 18);
    let text = (FAMILY, size)
        .into_font()
        .color(&BLACK)
        .pos(Pos::new(HPos::Left, VPos::Center));
    let top = 40 + step / 2;
    let at = |k: usize| -> (i32, i32) {
        let col = k as i32 / rows;
        (col * LEGEND_WIDTH as i32, top + (k as i32 % rows) * step)
    };
    if c.series.is_empty() {
        area.draw(&Text::new("(no data)", (20, top), text.clone()))?;
        return Ok(());
    }
    for (k, s) in c.series.iter().enumerate() {
        let (x, y) = at(k);
        let i = s.style;
        let col = color(i);
        if c.style == Style::Lines {
            area.draw(&PathElement::new(
                vec![(x + 12, y), (x + 58, y)],
                col.stroke_width(3),
            ))?;
        }
        with_marker!(i, col, |mk| {
            area.draw(&mk((x + 35, y)))?;
        });
        let label = if s.label.chars().count() > 26 {
            format!("{}…", s.label.chars().take(25).collect::<String>())
        } else {
            s.label.clone()
        };
        area.draw(&Text::new(label, (x + 70, y), text.clone()))?;
    }
    let lines = c.hline.iter().map(|(_, l)| l).chain(c.diagonal.iter());
    for (k, label) in lines.enumerate() {
        let (x, y) = at(c.series.len() + k);
        area.draw(&PathElement::new(
            vec![(x + 12, y), (x + 26, y)],
            BLACK.stroke_width(2),
        ))?;
        area.draw(&PathElement::new(
            vec![(x + 34, y), (x + 48, y)],
            BLACK.stroke_width(2),
        ))?;
        area.draw(&Text::new(label.clone(), (x + 70, y), text.clone()))?;
    }
    Ok(())
}

/// Thirty well-separated colours for white paper: Tableau 10, then darker and lighter variants
/// of distinct hues (no near-white or near-yellow shades that vanish on white).
const COLORS: [RGBColor; 30] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(90, 90, 90),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
    RGBColor(0, 0, 128),
    RGBColor(128, 0, 0),
    RGBColor(0, 100, 0),
    RGBColor(170, 110, 0),
    RGBColor(75, 0, 130),
    RGBColor(0, 128, 128),
    RGBColor(255, 0, 255),
    RGBColor(0, 0, 0),
    RGBColor(128, 128, 0),
    RGBColor(255, 99, 71),
    RGBColor(106, 90, 205),
    RGBColor(60, 179, 113),
    RGBColor(199, 21, 133),
    RGBColor(70, 130, 180),
    RGBColor(210, 105, 30),
    RGBColor(85, 107, 47),
    RGBColor(220, 20, 60),
    RGBColor(0, 191, 255),
    RGBColor(139, 69, 19),
    RGBColor(153, 50, 204),
];

fn color(i: usize) -> RGBColor {
    COLORS[i % COLORS.len()]
}

/// Compact tick labels: `1e6` for large or tiny magnitudes, trailing zeros trimmed otherwise.
fn fmt_tick(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if !(1e-3..1e4).contains(&a) {
        format!("{v:.0e}")
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_labels_are_compact() {
        assert_eq!(fmt_tick(0.0), "0");
        assert_eq!(fmt_tick(1.5), "1.5");
        assert_eq!(fmt_tick(2.0), "2");
        assert_eq!(fmt_tick(250.0), "250");
        assert_eq!(fmt_tick(10_000.0), "1e4");
        assert_eq!(fmt_tick(1e6), "1e6");
        assert_eq!(fmt_tick(0.0001), "1e-4");
    }

    #[test]
    fn auto_range_pads_and_skips_nonpositive_on_log_axes() {
        let (lo, hi) = auto_range([1.0, 1000.0, 0.0, -5.0], true, (1.0, 10.0));
        assert!(
            (lo - 0.1).abs() < 1e-3 && (hi - 10_000.0).abs() < 20.0,
            "{lo} {hi}"
        );
        let (lo, hi) = auto_range([2.0, 4.0], false, (0.0, 1.0));
        assert!(lo < 2.0 && hi > 4.0);
        assert_eq!(auto_range([], false, (0.0, 1.0)), (0.0, 1.0));
        let (lo, hi) = auto_range([3.0], false, (0.0, 1.0));
        assert!(lo < 3.0 && hi > 3.0);
    }

    #[test]
    fn series_styles_are_distinct() {
        let colours: Vec<RGBColor> = (0..30).map(color).collect();
        for (i, a) in colours.iter().enumerate() {
            for b in &colours[i + 1..] {
                assert_ne!(a, b);
            }
        }
        let mut pairs: Vec<(usize, usize)> = (0..120).map(|i| (i % 30, i % 8)).collect();
        pairs.sort_unstable();
        pairs.dedup();
        assert_eq!(pairs.len(), 120);
        assert_eq!(legend_columns(20), 1);
        assert_eq!(legend_columns(27), 2);
    }

    #[test]
    fn renders_svg_and_png() {
        let dir = std::env::temp_dir().join(format!("spmvkit-plots-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let chart = Chart {
            title: "test — τ ≤ 4, µs".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            x_log: true,
            y_log: false,
            x_range: (1.0, 1e6),
            y_range: (0.0, 2.0),
            style: Style::Points,
            series: (0..9)
                .map(|i| Series {
                    label: format!("method-{i}"),
                    style: i,
                    points: vec![(10.0 * (i + 1) as f64, 0.2 * i as f64)],
                })
                .collect(),
            hline: Some((1.0, "y = 1".into())),
            diagonal: None,
        };
        let files = render(&chart, &dir.join("t")).unwrap();
        for f in &files {
            assert!(
                std::fs::metadata(f).unwrap().len() > 1000,
                "{}",
                f.display()
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
